"""What a span says of a run's content: prompts, answers, tool arguments and results, as span
attributes (``OpenTelemetryListener(include_content=True)``).

Two vocabularies, side by side, so each tool finds what it reads:

- the OpenTelemetry GenAI semantic conventions: ``gen_ai.input.messages`` /
  ``gen_ai.output.messages`` (JSON, messages of typed parts), ``gen_ai.tool.call.arguments`` /
  ``gen_ai.tool.call.result`` (Logfire shows these);
- OpenInference, what Arize Phoenix reads: ``openinference.span.kind`` (LLM, TOOL, AGENT,
  CHAIN), ``input.value`` / ``output.value``, ``llm.input_messages.<i>.message.*``,
  ``llm.output_messages.<i>.message.*``, ``llm.token_count.*``, ``tool.name`` (Langfuse takes
  an observation's input and output from ``input.value`` / ``output.value``).

Every text passes the redaction policy first, then is cut to ``limit`` characters (redacting
first: a cut could split a secret into a piece the policy no longer knows). Tool arguments
that are JSON are redacted as structured data, so a ``password`` argument is hidden whole.
Pure functions over our own events' data: no OpenTelemetry import here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentensemble.redaction import policy_generation, redact, redact_text
from agentensemble.untrusted import UntrustedInputError, parse_json

DEFAULT_LIMIT = 16_000
"""Characters kept of one text (a message part, a tool result) on a span."""
_MESSAGES_FACTOR = 4
"""A conversation on a span keeps at most this many texts' worth: earlier turns go first."""

_FLAT_ATTRIBUTES = 64
"""OpenInference's flat message attributes on one span, at most (the SDK keeps 128 in all)."""
_FLAT_CALLS = 8
"""Tool calls of one message flattened, at most (all of them are in the JSON attributes)."""

JSON = "application/json"
TEXT = "text/plain"


def bounded(text: str, limit: int) -> str:
    """``text`` redacted, then cut to ``limit`` characters with a note of what was cut."""
    clean = redact_text(text)
    if len(clean) <= limit:
        return clean
    return f"{clean[:limit]}... [{len(clean) - limit} more characters]"


def arguments_text(arguments: str, limit: int) -> str:
    """A tool call's arguments: JSON redacted as data (secret-named keys hidden), else text."""
    try:
        value = parse_json(arguments, what="a tool call's arguments")  # a model wrote them
    except UntrustedInputError:
        return bounded(arguments, limit)
    return bounded(json.dumps(redact(value), ensure_ascii=False), limit)


def _text_of(content: Any) -> str:
    """A message's text: its text parts joined; an image or file part is named, never sent."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    pieces: list[str] = []
    for part in content if isinstance(content, Sequence) else ():
        if isinstance(part, Mapping):
            kind = part.get("type")
            pieces.append(str(part.get("text", "")) if kind == "text" else f"[{kind}]")
    return "\n".join(pieces)


def _parts(message: Mapping[str, Any], limit: int) -> list[dict[str, Any]]:
    """One message's GenAI-convention parts: text, tool calls, a tool's response."""
    text = _text_of(message.get("content"))
    if message.get("role") == "tool":
        return [
            {
                "type": "tool_call_response",
                "id": message.get("tool_call_id"),
                "response": bounded(text, limit),
            }
        ]
    parts: list[dict[str, Any]] = (
        [{"type": "text", "content": bounded(text, limit)}] if text else []
    )
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": function.get("name"),
                "arguments": arguments_text(str(function.get("arguments") or ""), limit),
            }
        )
    return parts


class MessageCache:
    """One task's messages, converted (redacted, cut) once: each model call of a task sends the
    whole conversation again, and converting it every call made a long tool loop quadratic.
    An entry is used again only for the very same message object whose content and tool calls
    are the very same objects, under the same redaction policy (no secret learnt since); the
    listener drops the cache when the task ends."""

    __slots__ = ("_entries", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._entries: dict[int, tuple[Any, ...]] = {}

    def convert(self, message: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
        """The message as a GenAI-convention message, and the size of its JSON."""
        content, calls = message.get("content"), message.get("tool_calls")
        hit = self._entries.get(id(message))
        generation = policy_generation()
        if (
            hit is not None
            and hit[0] is message
            and hit[1] is content
            and hit[2] is calls
            and hit[3] == generation
        ):
            return hit[4], hit[5]
        entry = {"role": str(message.get("role", "user")), "parts": _parts(message, self.limit)}
        size = len(_dumps(entry))
        self._entries[id(message)] = (message, content, calls, generation, entry, size)
        return entry, size


def _fit(messages: Sequence[Mapping[str, Any]], cache: MessageCache) -> list[dict[str, Any]]:
    """The conversation as GenAI-convention messages within ``_MESSAGES_FACTOR * limit``
    characters: the first message (the system prompt) and the latest turns, newest first until
    the budget is spent (so a long conversation costs the budget, not its length), and a note
    where earlier turns were left out."""
    if not messages:
        return []
    first, size = cache.convert(messages[0])
    budget = _MESSAGES_FACTOR * cache.limit - size
    kept: list[dict[str, Any]] = []
    for message in reversed(messages[1:]):
        entry, size = cache.convert(message)
        budget -= size
        if budget < 0 and kept:
            break
        kept.append(entry)
    left_out = len(messages) - 1 - len(kept)
    if not left_out:
        return [first, *reversed(kept)]
    note = {
        "role": "system",
        "parts": [{"type": "text", "content": f"[{left_out} earlier messages left out]"}],
    }
    return [first, note, *reversed(kept)]


def _flat_message(message: dict[str, Any]) -> list[tuple[str, Any]]:
    """One message as OpenInference's flat attributes, by their names after the message's
    index (``message.role``, ``message.tool_calls.0.tool_call.function.name``...)."""
    attributes: list[tuple[str, Any]] = [("message.role", message["role"])]
    texts = [p.get("content") or p.get("response") for p in message["parts"]]
    content = "\n".join(text for text in texts if isinstance(text, str))
    if content:
        attributes.append(("message.content", content))
    calls = [p for p in message["parts"] if p["type"] == "tool_call"]
    for number, call in enumerate(calls[:_FLAT_CALLS]):
        prefix = f"message.tool_calls.{number}.tool_call"
        attributes.append((f"{prefix}.id", call["id"] or ""))
        attributes.append((f"{prefix}.function.name", call["name"] or ""))
        attributes.append((f"{prefix}.function.arguments", call["arguments"]))
    responded = [p for p in message["parts"] if p["type"] == "tool_call_response"]
    if responded and responded[0]["id"]:
        attributes.append(("message.tool_call_id", responded[0]["id"]))
    return attributes


def _openinference_messages(prefix: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """``llm.input_messages.<i>.message.role`` / ``.content`` / ``.tool_calls...``, from the
    GenAI-convention messages (already redacted and cut). At most ``_FLAT_ATTRIBUTES`` of them:
    the SDK keeps 128 attributes a span and drops the oldest beyond (the span's own names
    first), so the first message and the latest that fit are flattened (newest first: a long
    conversation costs what fits); the JSON attributes hold the rest."""
    if not messages:
        return {}
    first = _flat_message(messages[0])
    room = _FLAT_ATTRIBUTES - len(first)
    latest: list[list[tuple[str, Any]]] = []
    for message in reversed(messages[1:]):
        flat = _flat_message(message)
        if len(flat) > room:
            break
        latest.append(flat)
        room -= len(flat)
    chosen = [first, *reversed(latest)]
    return {
        f"{prefix}.{index}.{name}": value
        for index, flat in enumerate(chosen)
        for name, value in flat
    }


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def model_call_started(
    model: str, provider: str | None, messages: Sequence[Mapping[str, Any]], cache: MessageCache
) -> dict[str, Any]:
    """A model call's span, when it starts: what was sent (converted through the task's
    ``cache``)."""
    sent = _fit(messages, cache)
    text = _dumps(sent)
    return {
        "gen_ai.system": provider or "_OTHER",
        "gen_ai.input.messages": text,
        "openinference.span.kind": "LLM",
        "llm.model_name": model,
        "llm.provider": provider or "",
        "input.value": text,
        "input.mime_type": JSON,
        **_openinference_messages("llm.input_messages", sent),
    }


def model_call_completed(response: Any, usage: Any, limit: int) -> dict[str, Any]:
    """A model call's span, when it answered: the answer (text and tool calls) and the token
    counts in OpenInference's names (the GenAI ones are set either way)."""
    attributes: dict[str, Any] = {
        "llm.token_count.prompt": usage.prompt_tokens,
        "llm.token_count.completion": usage.completion_tokens,
        "llm.token_count.total": usage.total_tokens,
    }
    if response is None:
        return attributes
    parts = _parts(response.to_message(), limit)
    answer: dict[str, Any] = {"role": "assistant", "parts": parts}
    if isinstance(response.finish_reason, str):
        answer["finish_reason"] = response.finish_reason
    text = next((p["content"] for p in parts if p["type"] == "text"), None)
    attributes.update(
        {
            "gen_ai.output.messages": _dumps([answer]),
            "output.value": text if text is not None else _dumps(parts),
            "output.mime_type": TEXT if text is not None else JSON,
            **_openinference_messages("llm.output_messages", [answer]),
        }
    )
    return attributes


def tool_call_started(name: str, arguments: str, limit: int) -> dict[str, Any]:
    """A tool call's span, when it starts: the tool and its arguments."""
    sent = arguments_text(arguments, limit)
    return {
        "openinference.span.kind": "TOOL",
        "tool.name": name,
        "gen_ai.tool.call.arguments": sent,
        "input.value": sent,
        "input.mime_type": JSON,
    }


def tool_call_completed(output: str, limit: int) -> dict[str, Any]:
    """A tool call's span, when it ended: its result (an error's text for a failed call)."""
    result = bounded(output, limit)
    return {"gen_ai.tool.call.result": result, "output.value": result, "output.mime_type": TEXT}


def started(kind: str, text: str | None, limit: int) -> dict[str, Any]:
    """A run's (CHAIN) or an agent's (AGENT) span, when it starts: what it was asked."""
    attributes: dict[str, Any] = {"openinference.span.kind": kind}
    if text:
        attributes.update({"input.value": bounded(text, limit), "input.mime_type": TEXT})
    return attributes


def ended(text: str | None, limit: int) -> dict[str, Any]:
    """A run's or an agent's span, when it ended: its answer."""
    if text is None:
        return {}
    return {"output.value": bounded(text, limit), "output.mime_type": TEXT}


__all__ = [
    "DEFAULT_LIMIT",
    "MessageCache",
    "arguments_text",
    "bounded",
    "ended",
    "model_call_completed",
    "model_call_started",
    "started",
    "tool_call_completed",
    "tool_call_started",
]
