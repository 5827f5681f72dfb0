"""``OpenTelemetryListener(include_content=True)``: prompts, answers, tool arguments and
results on the spans, in the GenAI conventions' and OpenInference's attributes (SDK in-memory
exporter), redacted and bounded; without it, spans carry no content at all."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.logging import register_secret
from agentensemble.otel import OpenTelemetryListener
from agentensemble.testing import ScriptedChatModel, tool_call

SECRET = "registered-otel-content-7731"
CONTENT_KEYS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "input.value",
    "output.value",
    "openinference.span.kind",
)


@tool
def lookup(city: str, password: str = "") -> str:
    """Weather of a city."""
    return f"Sunny in {city}, token {SECRET}"


def traced(include_content: bool, **options: Any) -> tuple[ReadableSpan, ...]:
    register_secret(SECRET)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = ScriptedChatModel(
        [tool_call("lookup", {"city": "Oslo", "password": "hunter2-open"}), "Sunny in Oslo"]
    )
    agent = Agent(role="Forecaster", goal="Forecast", tools=[lookup], llm=model)
    listener = OpenTelemetryListener(provider, include_content=include_content, **options)
    task = Task(description=f"Forecast Oslo (key {SECRET})", agent=agent)
    Ensemble(tasks=[task], listeners=[listener]).run()
    return exporter.get_finished_spans()


def spans_by_kind(spans: tuple[ReadableSpan, ...]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        attributes = dict(span.attributes or {})
        found.setdefault(str(attributes.get("openinference.span.kind")), []).append(attributes)
    return found


def test_off_by_default_the_spans_carry_no_content() -> None:
    spans = traced(include_content=False)

    assert len(spans) == 5
    for span in spans:
        assert not set(CONTENT_KEYS) & set(span.attributes or {}), span.name
    assert "Oslo" not in repr([dict(span.attributes or {}) for span in spans])


def test_prompts_answers_and_tool_calls_are_on_the_spans() -> None:
    kinds = spans_by_kind(traced(include_content=True))

    assert sorted((kind, len(spans)) for kind, spans in kinds.items()) == [
        ("AGENT", 1),
        ("CHAIN", 1),
        ("LLM", 2),
        ("TOOL", 1),
    ]
    first, second = kinds["LLM"]
    sent = json.loads(first["gen_ai.input.messages"])
    assert [m["role"] for m in sent] == ["system", "user"]
    assert "Forecast Oslo" in sent[1]["parts"][0]["content"]
    assert first["gen_ai.system"] == "_OTHER"  # a scripted model names no provider
    assert first["llm.input_messages.1.message.role"] == "user"
    assert "Forecast Oslo" in first["llm.input_messages.1.message.content"]
    (answer,) = json.loads(first["gen_ai.output.messages"])
    assert answer["parts"][0]["type"] == "tool_call" and answer["parts"][0]["name"] == "lookup"
    assert first["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] == "lookup"
    # the second call sees the tool's result, and answers in text
    replayed = json.loads(second["gen_ai.input.messages"])
    assert replayed[-1]["role"] == "tool"
    assert replayed[-1]["parts"][0]["type"] == "tool_call_response"
    assert "Sunny in Oslo" in replayed[-1]["parts"][0]["response"]
    assert second["output.value"] == "Sunny in Oslo"
    assert json.loads(second["gen_ai.output.messages"])[0]["finish_reason"] == "stop"
    assert second["llm.token_count.prompt"] == second["gen_ai.usage.input_tokens"]
    assert second["llm.token_count.total"] > second["llm.token_count.completion"] > 0
    (tool_span,) = kinds["TOOL"]
    assert tool_span["tool.name"] == "lookup"
    assert json.loads(tool_span["gen_ai.tool.call.arguments"])["city"] == "Oslo"
    assert tool_span["gen_ai.tool.call.result"].startswith("Sunny in Oslo")
    assert tool_span["input.value"] == tool_span["gen_ai.tool.call.arguments"]
    (agent,) = kinds["AGENT"]
    assert agent["input.value"].startswith("Forecast Oslo")
    assert agent["output.value"] == "Sunny in Oslo"
    (run,) = kinds["CHAIN"]
    assert run["output.value"] == "Sunny in Oslo"


def test_content_passes_the_redaction_policy() -> None:
    exported = repr([dict(span.attributes or {}) for span in traced(include_content=True)])

    assert "Forecast Oslo" in exported
    assert SECRET not in exported  # a registered secret, in the prompt and in a tool result
    assert "hunter2-open" not in exported  # a password argument, hidden by its name
    assert "***" in exported


def test_each_text_is_cut_to_the_limit() -> None:
    kinds = spans_by_kind(traced(include_content=True, max_content_chars=12))

    (tool_span,) = kinds["TOOL"]
    result = tool_span["gen_ai.tool.call.result"]
    assert result.startswith("Sunny in Osl") and result.endswith("more characters]")
    first = json.loads(kinds["LLM"][0]["gen_ai.input.messages"])
    assert all(len(m["parts"][0]["content"]) < 12 + 40 for m in first)


def test_a_long_conversation_keeps_the_system_prompt_and_the_latest_turns() -> None:
    from agentensemble.tracing._content import MessageCache, model_call_started

    messages = [{"role": "system", "content": "You are terse."}] + [
        {"role": "user" if i % 2 else "assistant", "content": f"turn {i} " + "x" * 50}
        for i in range(40)
    ]
    started = model_call_started("m", None, messages, MessageCache(100))
    sent = json.loads(started["gen_ai.input.messages"])

    assert sent[0]["parts"][0]["content"] == "You are terse."
    assert sent[1]["parts"][0]["content"].endswith("earlier messages left out]")
    assert sent[-1]["parts"][0]["content"].startswith("turn 39 ")
    assert len(json.dumps(sent)) < 4 * 100 + 200


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"include_content": "yes"}, TypeError, "include_content must be True or False; got str"),
        ({"max_content_chars": 0}, ValueError, "max_content_chars must be a positive number"),
        ({"max_content_chars": "10"}, ValueError, "max_content_chars must be a positive number"),
        ({"max_content_chars": True}, ValueError, "max_content_chars must be a positive number"),
    ],
)
def test_bad_settings_are_refused_by_name(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        OpenTelemetryListener(**options)


def test_a_long_tool_loop_keeps_every_span_within_the_sdks_attribute_limit() -> None:
    # the SDK keeps 128 attributes a span and drops the oldest beyond: the span's own names
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    turns = [tool_call("lookup", {"city": f"City {i}"}) for i in range(60)]
    agent = Agent(
        role="Forecaster",
        goal="Forecast",
        tools=[lookup],
        llm=ScriptedChatModel([*turns, "All sunny"]),
    )
    agent = agent.model_copy(update={"max_iterations": 70})
    listener = OpenTelemetryListener(provider, include_content=True)
    Ensemble(tasks=[Task(description="Forecast", agent=agent)], listeners=[listener]).run()

    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert len(chats) == 61
    last = chats[-1]
    assert last.dropped_attributes == 0
    attributes: dict[str, Any] = dict(last.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"  # the span's own names survive
    assert len(json.loads(attributes["gen_ai.input.messages"])) == 2 + 2 * 60
    assert attributes["llm.input_messages.0.message.role"] == "system"
    flat = {key.split(".")[2] for key in attributes if key.startswith("llm.input_messages.")}
    assert 2 < len(flat) < 60  # the first message and the latest that fit
    newest = max(flat, key=int)
    assert attributes[f"llm.input_messages.{newest}.message.role"] == "tool"
    assert "City 59" in attributes[f"llm.input_messages.{newest}.message.content"]


def test_a_converted_message_is_redone_when_it_or_the_policy_changed() -> None:
    from agentensemble.tracing._content import MessageCache

    cache = MessageCache(1000)
    late = "learnt-later-secret-4410"
    message = {"role": "user", "content": f"call with {late}"}
    first, _ = cache.convert(message)
    assert cache.convert(message)[0] is first  # the same message again: converted once
    assert late in first["parts"][0]["content"]  # not a secret yet

    register_secret(late)  # the policy learnt a secret: what was converted may now hold one
    again, _ = cache.convert(message)
    assert again["parts"][0]["content"] == "call with ***"

    message["content"] = "trimmed by a context policy"
    assert cache.convert(message)[0]["parts"][0]["content"] == "trimmed by a context policy"
