"""The context policy's strategies as pure functions: old tool results become placeholders,
the oldest turns go first, a tool call and its result are always kept or dropped together."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import ValidationError

from agentensemble import LLM, Agent, Ensemble, Task, tool
from agentensemble.config import load_crew
from agentensemble.context_policy import (
    ContextPolicy,
    drop_old_tool_results,
    fit,
    oldest_part,
    trim_oldest_turns,
    turns,
)
from agentensemble.errors import TaskExecutionError
from agentensemble.events import ContextCompacted, LLMCallCompleted
from agentensemble.execution._window import TokenCounter, model_window
from agentensemble.testing import (
    Fault,
    FunctionChatModel,
    OpenAICompatibleServer,
    ScriptedChatModel,
    TextReply,
    ToolCallsReply,
    tool_call,
)

Message = dict[str, Any]


def call(n: int) -> Message:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": f"c{n}", "type": "function", "function": {"name": f"t{n}"}}],
    }


def result(n: int, text: str = "x" * 400) -> Message:
    return {"role": "tool", "tool_call_id": f"c{n}", "content": text}


SYSTEM = {"role": "system", "content": "sys"}
PROMPT = {"role": "user", "content": "task"}
CONVERSATION = [SYSTEM, PROMPT, call(1), result(1), call(2), result(2), call(3), result(3)]


def words(messages: Sequence[Message]) -> int:
    """A stand-in token counter: one token per 10 characters of content, at least one each."""
    return sum(max(1, len(str(m.get("content") or "")) // 10) for m in messages)


def shape(messages: Sequence[Message]) -> list[str]:
    return [m["role"] + (":" + m["tool_call_id"] if m["role"] == "tool" else "") for m in messages]


@pytest.mark.parametrize(
    ("keep", "whole"),
    [(None, ["c1", "c2", "c3"]), (3, ["c1", "c2", "c3"]), (2, ["c2", "c3"]), (1, ["c3"]), (0, [])],
)
def test_tool_results_beyond_the_newest_are_replaced_by_a_placeholder(
    keep: int | None, whole: list[str]
) -> None:
    shorter = drop_old_tool_results(CONVERSATION, keep)
    assert shape(shorter) == shape(CONVERSATION)  # every call keeps its result message
    for message in shorter:
        if message["role"] == "tool":
            kept = message["tool_call_id"] in whole
            assert (message["content"] == "x" * 400) is kept
            if not kept:
                name = "t" + message["tool_call_id"][1:]
                assert message["content"] == (
                    f"[tool result of {name} removed to keep the conversation short: "
                    "400 characters]"
                )
    assert CONVERSATION[3]["content"] == "x" * 400  # the input is never changed


def test_a_turn_is_an_assistant_message_with_its_tool_results() -> None:
    two_calls = {**call(4), "tool_calls": [*call(4)["tool_calls"], *call(5)["tool_calls"]]}
    cut = turns([SYSTEM, PROMPT, two_calls, result(4), result(5), {"role": "assistant"}], 2)
    assert [shape(turn) for turn in cut] == [
        ["assistant", "tool:c4", "tool:c5"],
        ["assistant"],
    ]


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (
            200,
            [
                "system",
                "user",
                "assistant",
                "tool:c1",
                "assistant",
                "tool:c2",
                "assistant",
                "tool:c3",
            ],
        ),
        (100, ["system", "user", "assistant", "tool:c2", "assistant", "tool:c3"]),
        (50, ["system", "user", "assistant", "tool:c3"]),
        (1, ["system", "user", "assistant", "tool:c3"]),  # the head and the newest turn stay
    ],
)
def test_the_oldest_turns_go_first_and_a_call_never_loses_its_result(
    limit: int, expected: list[str]
) -> None:
    assert shape(trim_oldest_turns(CONVERSATION, 2, limit, words)) == expected


def test_the_part_a_summary_would_replace_is_the_oldest_whole_turns() -> None:
    old, rest = oldest_part(CONVERSATION, 2, 50, words)
    assert shape(old) == ["assistant", "tool:c1", "assistant", "tool:c2"]
    assert shape(rest) == ["system", "user", "assistant", "tool:c3"]


def test_fit_drops_old_tool_results_before_any_turn() -> None:
    policy = ContextPolicy(max_prompt_tokens=100, keep_tool_results=1)
    shorter = fit(CONVERSATION, policy, head=2, limit=60, count=words)
    assert shape(shorter) == shape(CONVERSATION)  # placeholders were enough: no turn dropped
    assert words(shorter) <= 60 < words(CONVERSATION)
    trimmed = fit(CONVERSATION, policy, head=2, limit=45, count=words)
    assert shape(trimmed) == ["system", "user", "assistant", "tool:c3"]


def test_the_count_grows_with_the_turns_not_their_square() -> None:
    calls = 0

    def counting(messages: Sequence[Message]) -> int:
        nonlocal calls
        calls += 1
        return words(messages)

    long = [SYSTEM, PROMPT] + [m for n in range(200) for m in (call(n), result(n))]
    trim_oldest_turns(long, 2, 50, counting)
    assert calls <= 201  # the head once, then each turn once: linear, however many go


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"max_prompt_tokens": 0}, "max_prompt_tokens"),
        ({"max_prompt_tokens": -10}, "max_prompt_tokens"),
        ({"max_prompt_tokens": True}, "max_prompt_tokens"),
        ({"max_prompt_tokens": "window"}, "max_prompt_tokens"),
        ({"keep_tool_results": -1}, "keep_tool_results"),
        ({"summarize_with": 3}, "summarize_with"),
        ({"summarize_with": "  "}, "summarize_with"),
        ({"window": 100}, "window"),
    ],
)
def test_a_policy_that_cannot_work_is_refused_naming_the_field(
    settings: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        ContextPolicy(**settings)
    assert caught.value.errors()[0]["loc"][0] == field


# -- the policy in a run ------------------------------------------------------------------------

LONG = "row " * 500  # 2,000 characters: about 500 tokens by the estimate of a scripted model


@tool
def read_table(name: str) -> str:
    """Read a table."""
    return f"{name}: {LONG}"


class Listen:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def on_event(self, event: Any) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]


def reads(count: int) -> list[Any]:
    """A model's script: ``count`` turns reading a table each, then the answer."""
    return [*(tool_call("read_table", {"name": f"t{n}"}) for n in range(count)), "all read"]


def paired(messages: Sequence[Message]) -> bool:
    """Every tool call has its result and every result its call (what providers demand)."""
    calls = {c["id"] for m in messages for c in m.get("tool_calls") or ()}
    results = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    return calls == results


def run_reading(
    policy: ContextPolicy, turns: int, **agent: Any
) -> tuple[Any, ScriptedChatModel, Listen]:
    model = ScriptedChatModel(reads(turns))
    listen = Listen()
    reader = Agent(role="Reader", goal="Read every table", tools=[read_table], llm=model, **agent)
    task = Task(description="Read the tables t0 to t5", name="reading", agent=reader)
    output = Ensemble(tasks=[task], context_policy=policy, listeners=[listen]).run()
    return output, model, listen


async def sizes(model: ScriptedChatModel) -> list[int]:
    """Each request's tokens as the policy counts them for this model (tool specs included)."""
    counter = TokenCounter(model, model.requests[0].tools)
    await counter.start()
    return [counter(request.messages) + counter.tools_tokens for request in model.requests]


@pytest.mark.anyio
async def test_a_conversation_that_outgrows_the_window_is_compacted_and_the_run_finishes() -> None:
    policy = ContextPolicy(max_prompt_tokens=1500, keep_tool_results=1)
    output, model, listen = run_reading(policy, 6)
    assert output.raw == "all read"
    assert max(await sizes(model)) <= 1500  # no request ever over the window
    assert all(paired(request.messages) for request in model.requests)
    last = model.requests[-1].messages
    results = [m["content"] for m in last if m["role"] == "tool"]
    assert len(results) == 6  # every call kept its result: the old ones as placeholders
    assert results[-1].startswith("t5: row")
    assert results[0] == (
        "[tool result of read_table removed to keep the conversation short: 2004 characters]"
    )
    compactions = listen.of(ContextCompacted)
    assert compactions and all(c.reason == "window" and c.limit == 1500 for c in compactions)
    assert all(c.tokens_before > 1500 >= c.tokens_after for c in compactions)
    shortened = [r for r in results if r.startswith("[tool result of read_table removed")]
    assert sum(c.tool_results_elided for c in compactions) == len(shortened) >= 4
    trace = output.trace.tasks[0]  # type: ignore[union-attr]
    assert [e.type for e in trace.events].count("ContextCompacted") == len(compactions)


@pytest.mark.anyio
async def test_without_placeholders_the_oldest_turns_go_with_their_results() -> None:
    output, model, listen = run_reading(ContextPolicy(max_prompt_tokens=1500), 6)
    assert output.raw == "all read"
    assert max(await sizes(model)) <= 1500
    assert all(paired(request.messages) for request in model.requests)
    last = model.requests[-1].messages
    assert "Read the tables" in last[1]["content"]  # the task's prompt always stays
    assert [m["content"][:3] for m in last if m["role"] == "tool"] == ["t4:", "t5:"]
    assert sum(c.messages_dropped for c in listen.of(ContextCompacted)) == 8  # 4 turns of 2


def test_the_oldest_turns_are_summarised_by_the_policys_model_counted_like_any_call() -> None:
    summariser = FunctionChatModel(
        lambda messages, tools: f"{messages[1]['content'].count('[tool result]')} tables read."
    )
    summariser.model = "openai/gpt-4o-mini"
    policy = ContextPolicy(max_prompt_tokens=1500, summarize_with=summariser)
    output, model, listen = run_reading(policy, 6)
    assert output.raw == "all read"
    summaries = [
        m["content"]
        for m in model.requests[-1].messages
        if str(m.get("content", "")).startswith("Summary of the earlier conversation")
    ]
    assert len(summaries) == 1 and summaries[0].endswith("tables read.")  # one, rolling
    asked = summariser.requests[0].messages[1]["content"]
    assert "[assistant called read_table]" in asked and "[tool result] t0: row" in asked
    assert all(
        "Summary of the earlier conversation" in request.messages[1]["content"]
        for request in summariser.requests[1:]
    )  # a later summary takes the one before it in
    assert all(paired(request.messages) for request in model.requests)
    called = [e.model for e in listen.of(LLMCallCompleted)]
    assert called.count("openai/gpt-4o-mini") == len(summariser.requests) >= 1
    task = output.task_outputs[0]
    assert task.llm_calls == len(model.requests) + len(summariser.requests)
    assert sum(c.messages_summarized for c in listen.of(ContextCompacted)) >= 2


def test_a_prompt_that_cannot_fit_fails_before_anything_is_sent() -> None:
    model = ScriptedChatModel(["never sent"])
    agent = Agent(
        role="Reader", goal="Read", llm=model, context_policy=ContextPolicy(max_prompt_tokens=20)
    )
    task = Task(description="Read " + "everything " * 50, name="reading", agent=agent)
    with pytest.raises(TaskExecutionError) as caught:
        Ensemble(tasks=[task]).run()
    message = str(caught.value.__cause__)
    assert "Task 'reading'" in message and "20-token window" in message
    assert "the prompt is" in message
    assert model.requests == []


def test_the_agents_policy_wins_over_the_ensembles() -> None:
    model = ScriptedChatModel(["never sent"])
    agent = Agent(
        role="Reader", goal="Read", llm=model, context_policy=ContextPolicy(max_prompt_tokens=5)
    )
    task = Task(description="Read the table", agent=agent)
    with pytest.raises(TaskExecutionError, match="5-token window"):
        Ensemble(tasks=[task], context_policy=ContextPolicy(max_prompt_tokens=100_000)).run()


@pytest.mark.parametrize(
    ("model", "window"),
    [
        (lambda: LLM("openai/gpt-4o-mini"), 128_000),
        (lambda: LLM("openai/gpt-4o-mini", max_tokens=1_000), 127_000),  # the reply's room
        (lambda: LLM("openai/gpt-4o", fallbacks=["openai/gpt-3.5-turbo"]), 16_385),  # smallest
        (lambda: ScriptedChatModel([]), None),  # litellm's table does not know it
    ],
)
def test_the_models_window_is_litellms_max_input_tokens_less_the_reply(
    model: Any, window: int | None
) -> None:
    assert model_window(model()) == window


def test_a_crew_file_sets_a_context_policy_on_an_agent_or_the_ensemble() -> None:
    crew = {
        "context_policy": {"max_prompt_tokens": 8000},
        "agents": {"w": {"role": "W", "goal": "G", "context_policy": {"keep_tool_results": 2}}},
        "tasks": [{"description": "Work", "agent": "w"}],
    }
    ensemble = load_crew(crew)
    assert ensemble.context_policy == ContextPolicy(max_prompt_tokens=8000)
    assert ensemble.agents[0].context_policy == ContextPolicy(keep_tool_results=2)
    crew["context_policy"] = {"max_prompt_tokens": 0}
    with pytest.raises(Exception, match="max_prompt_tokens"):
        load_crew(crew)


# -- a provider's context-length error over HTTP: one compaction and a retry -----------------


def refusing_long_prompts(body: dict[str, Any]) -> Any:
    """A provider whose window holds two whole tool results: more, and it refuses the prompt."""
    whole = [m for m in body["messages"] if m["role"] == "tool" and "row row" in m["content"]]
    if len(whole) > 2:
        message = "This model's maximum context length is 1500 tokens; your messages were more"
        error = {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        }
        return Fault.http(400, body=json.dumps(error))
    tools_seen = sum(1 for m in body["messages"] if m["role"] == "tool")
    if tools_seen < 4:
        return ToolCallsReply(calls=(("read_table", json.dumps({"name": f"t{tools_seen}"})),))
    return TextReply("all read")


def test_a_providers_context_length_error_compacts_once_and_asks_again() -> None:
    listen = Listen()
    with OpenAICompatibleServer() as server:
        server.set_responder(refusing_long_prompts)
        llm = LLM("openai/gpt-4o-mini", api_base=server.base_url, api_key="sk-test-window")
        agent = Agent(
            role="Reader",
            goal="Read",
            tools=[read_table],
            llm=llm,
            context_policy=ContextPolicy(keep_tool_results=1),
        )
        task = Task(description="Read the tables", agent=agent)
        output = Ensemble(tasks=[task], listeners=[listen]).run()
        outcomes = [request.outcome for request in server.log]
    assert output.raw == "all read"
    assert outcomes.count("fault:status:400") == 1, outcomes
    [compaction, *_] = listen.of(ContextCompacted)
    assert compaction.reason == "provider_error" and compaction.tool_results_elided >= 1


def test_a_summariser_that_cannot_work_fails_before_the_tasks_first_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    model = ScriptedChatModel(["never sent"])
    policy = ContextPolicy(summarize_with="anthropic/claude-3-5-haiku-latest")
    agent = Agent(role="Reader", goal="Read", llm=model, context_policy=policy)
    with pytest.raises(TaskExecutionError) as caught:
        Ensemble(tasks=[Task(description="Read", agent=agent)]).run()
    assert "context_policy.summarize_with:" in str(caught.value.__cause__)
    assert "ANTHROPIC_API_KEY" in str(caught.value.__cause__)
    assert model.requests == []
