"""The one conversion: what each provider is sent for an assistant turn (table-driven), usage
read from every provider shape, cost at cached rates, streamed reasoning/refusal/thinking."""

from __future__ import annotations

from typing import Any

import pytest

from agentensemble.llm._messages import outgoing, outgoing_tools, read_response, read_usage
from agentensemble.llm.cost import cost_usd, price_table
from agentensemble.llm.stream_assembly import REFUSAL_UNSAID, StreamAssembler
from agentensemble.llm.types import PROVIDER_KEY, ChatResponse, ProviderPart, ToolCall
from agentensemble.outputs import TokenUsage

CALL = ToolCall(id="c1", name="f", arguments="{}")
SIGNED = ToolCall(
    id="c2",
    name="g",
    arguments="{}",
    provider_fields={"thought_signature": "sig", PROVIDER_KEY: "gemini"},
)
THINKING = ProviderPart("anthropic", "thinking_blocks", [{"type": "thinking", "signature": "s"}])
REASONING = ProviderPart("deepseek", "reasoning_content", "because")


def sent(response: ChatResponse, provider: str) -> dict[str, Any]:
    (message,) = outgoing([response.to_message()], provider)
    return message


@pytest.mark.parametrize(
    ("response", "provider", "expected"),
    [
        # a turn of only tool calls: "" on the OpenAI wire, no text at all for block providers
        (ChatResponse(tool_calls=[CALL]), "openai", {"content": ""}),
        (ChatResponse(tool_calls=[CALL]), "hosted_vllm", {"content": ""}),
        (ChatResponse(tool_calls=[CALL]), "anthropic", {"content": None}),
        (ChatResponse(tool_calls=[CALL]), "gemini", {"content": None}),
        # the text beside tool calls, as written, everywhere
        (
            ChatResponse(content="Let me look.", tool_calls=[CALL]),
            "anthropic",
            {"content": "Let me look."},
        ),
        (
            ChatResponse(content="Let me look.", tool_calls=[CALL]),
            "openai",
            {"content": "Let me look."},
        ),
        # provider parts: back to their provider only
        (
            ChatResponse(tool_calls=[CALL], provider_parts=(THINKING,)),
            "anthropic",
            {"thinking_blocks": THINKING.value},
        ),
        (
            ChatResponse(tool_calls=[CALL], provider_parts=(THINKING,)),
            "openai",
            {"thinking_blocks": None},
        ),
        (
            ChatResponse(content="x", provider_parts=(REASONING,)),
            "deepseek",
            {"reasoning_content": "because"},
        ),
        (
            ChatResponse(content="x", provider_parts=(REASONING,)),
            "groq",
            {"reasoning_content": None},
        ),
        (
            ChatResponse(content="x", provider_parts=(REASONING,)),
            "anthropic",
            {"reasoning_content": None},
        ),
    ],
)
def test_what_each_provider_is_sent_for_an_assistant_turn(
    response: ChatResponse, provider: str, expected: dict[str, Any]
) -> None:
    message = sent(response, provider)
    assert PROVIDER_KEY not in message
    for key, value in expected.items():
        assert message.get(key) == value


def test_a_calls_own_provider_fields_go_back_to_its_provider_only() -> None:
    response = ChatResponse(tool_calls=[SIGNED])
    (gemini_call,) = sent(response, "gemini")["tool_calls"]
    (openai_call,) = sent(response, "openai")["tool_calls"]
    assert gemini_call["provider_specific_fields"] == {"thought_signature": "sig"}
    assert "provider_specific_fields" not in openai_call


def test_user_and_tool_messages_are_sent_untouched() -> None:
    messages = [
        {"role": "user", "content": ""},
        {"role": "tool", "tool_call_id": "c", "content": "x"},
    ]
    assert outgoing(messages, "anthropic") == messages


def test_prompt_cache_breakpoints_only_where_a_provider_needs_them() -> None:
    system = [{"role": "system", "content": "rules"}]
    tools = [{"type": "function", "function": {"name": "f"}}]
    assert outgoing(system, "anthropic", prompt_cache=True)[0]["content"] == [
        {"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}}
    ]
    assert outgoing_tools(tools, "anthropic", prompt_cache=True)[-1]["cache_control"]
    assert outgoing(system, "openai", prompt_cache=True) == system
    assert outgoing_tools(tools, "openai", prompt_cache=True) == tools
    assert outgoing(system, "anthropic", prompt_cache=False) == system


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (  # OpenAI
            {
                "prompt_tokens": 100,
                "completion_tokens": 10,
                "prompt_tokens_details": {"cached_tokens": 64},
                "completion_tokens_details": {"reasoning_tokens": 4},
            },
            TokenUsage(
                prompt_tokens=100,
                completion_tokens=10,
                total_tokens=110,
                cached_prompt_tokens=64,
                reasoning_tokens=4,
            ),
        ),
        (  # Anthropic through litellm
            {
                "prompt_tokens": 1114,
                "completion_tokens": 5,
                "total_tokens": 1119,
                "cache_read_input_tokens": 1111,
                "cache_creation_input_tokens": 3,
            },
            TokenUsage(
                prompt_tokens=1114,
                completion_tokens=5,
                total_tokens=1119,
                cached_prompt_tokens=1111,
                cache_write_tokens=3,
            ),
        ),
        (  # DeepSeek
            {"prompt_tokens": 563, "completion_tokens": 116, "prompt_cache_hit_tokens": 512},
            TokenUsage(
                prompt_tokens=563, completion_tokens=116, total_tokens=679, cached_prompt_tokens=512
            ),
        ),
        (  # OpenAI's cache writes
            {
                "prompt_tokens": 4020,
                "completion_tokens": 4,
                "prompt_tokens_details": {"cache_write_tokens": 4012, "cached_tokens": 0},
            },
            TokenUsage(
                prompt_tokens=4020, completion_tokens=4, total_tokens=4024, cache_write_tokens=4012
            ),
        ),
        (
            {"prompt_tokens": True, "completion_tokens": "3"},
            TokenUsage(),
        ),  # nonsense counts nothing
    ],
)
def test_usage_is_read_from_every_provider_shape(
    usage: dict[str, Any], expected: TokenUsage
) -> None:
    assert read_usage(usage) == expected


def test_usage_details_add_up() -> None:
    one = TokenUsage(
        prompt_tokens=10,
        total_tokens=10,
        cached_prompt_tokens=4,
        cache_write_tokens=2,
        reasoning_tokens=1,
    )
    assert one + one == TokenUsage(
        prompt_tokens=20,
        total_tokens=20,
        cached_prompt_tokens=8,
        cache_write_tokens=4,
        reasoning_tokens=2,
    )


def test_cost_prices_cache_reads_and_writes_at_their_rates() -> None:
    prices = price_table()["claude-sonnet-4-5"]
    usage = TokenUsage(
        prompt_tokens=1000,
        completion_tokens=0,
        total_tokens=1000,
        cached_prompt_tokens=600,
        cache_write_tokens=300,
    )
    expected = (
        100 * prices["input_cost_per_token"]
        + 600 * prices["cache_read_input_token_cost"]
        + 300 * prices["cache_creation_input_token_cost"]
    )
    assert cost_usd(usage, "anthropic/claude-sonnet-4-5") == pytest.approx(expected)


def test_cached_counts_beyond_the_prompt_are_bounded_by_it() -> None:
    wild = TokenUsage(
        prompt_tokens=10, total_tokens=10, cached_prompt_tokens=500, cache_write_tokens=500
    )
    rate = price_table()["gpt-4o"]["cache_read_input_token_cost"]
    assert cost_usd(wild, "gpt-4o") == pytest.approx(10 * rate)


def test_a_refusal_and_reasoning_are_read_from_a_whole_answer() -> None:
    answer = {
        "model": "m",
        "choices": [
            {
                "finish_reason": "stop",
                "message": {"content": None, "refusal": "No.", "reasoning_content": "why"},
            }
        ],
    }
    response = read_response(answer, provider="deepseek")
    assert response.refused and response.refusal == "No."
    assert response.reasoning == "why"
    assert response.provider_parts == (ProviderPart("deepseek", "reasoning_content", "why"),)


@pytest.mark.parametrize("finish", ["content_filter", "SAFETY", "refusal"])
def test_a_filter_stop_is_a_refusal(finish: str) -> None:
    assert ChatResponse(finish_reason=finish).refused
    assert not ChatResponse(finish_reason="stop", content="hi").refused


def delta(**fields: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "choices": [{"delta": fields, "finish_reason": fields.pop("finish", None)}],
    }


def test_streamed_thinking_blocks_are_assembled_with_their_signatures() -> None:
    assembler = StreamAssembler("anthropic")
    for chunk in [
        delta(
            reasoning_content="Let me ",
            thinking_blocks=[{"type": "thinking", "thinking": "Let me "}],
        ),
        delta(
            reasoning_content="think.", thinking_blocks=[{"type": "thinking", "thinking": "think."}]
        ),
        delta(thinking_blocks=[{"type": "thinking", "thinking": "", "signature": "Eq=="}]),
        delta(content="Answer", finish="stop"),
    ]:
        assembler.add(chunk)
    response = assembler.response()
    assert response.reasoning == "Let me think."
    assert response.provider_parts == (
        ProviderPart(
            "anthropic",
            "thinking_blocks",
            [{"type": "thinking", "thinking": "Let me think.", "signature": "Eq=="}],
        ),
    )


def test_a_streamed_refusal_keeps_its_words_or_says_they_were_lost() -> None:
    words = StreamAssembler()
    for chunk in [delta(refusal=""), delta(refusal="No"), delta(refusal="."), delta(finish="stop")]:
        words.add(chunk)
    assert words.response().refusal == "No."
    lost = StreamAssembler()
    for chunk in [delta(refusal=""), delta(), delta(finish="stop")]:
        lost.add(chunk)
    assert lost.response().refusal == REFUSAL_UNSAID
    answered = StreamAssembler()
    for chunk in [delta(refusal=""), delta(content="Sure"), delta(finish="stop")]:
        answered.add(chunk)
    assert answered.response().refusal is None
