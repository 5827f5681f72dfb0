"""Our message model <-> litellm's: the one conversion every model call goes through.

Pure functions, no I/O. ``read_response`` turns litellm's answer (or a plain OpenAI-shaped dict)
into a ``ChatResponse`` with reasoning, refusal, usage details and the parts the provider needs
back; ``outgoing`` turns our history into what a request to ``provider`` sends: provider parts
only to the provider they came from, no empty text part for providers that build content blocks,
Anthropic ``cache_control`` breakpoints on the stable prefix when prompt caching is on, and
attachments (``ATTACHMENTS_KEY``) as OpenAI-format content parts, which litellm turns into each
provider's own (Anthropic image and document blocks, Gemini inline data...):

- an ``Image``: ``image_url`` with its https URL or a ``data:`` URL of its bytes;
- a PDF ``Document``: a ``file`` part, ``file_data`` a ``data:`` URL (or ``file_id`` its URL);
  a text ``Document``: a text part holding its text;
- an ``Audio``: ``input_audio`` with its base64 bytes and format (a URL: a ``file`` part).

Encoding an attachment reads its bytes, from a durable run's database the first time for bytes a
checkpoint kept, and base64-encodes up to 20 MiB: ``LLM`` builds a request whose attachments hold
bytes (``holds_bytes``) in a worker thread, never on the event loop.

Each part follows a text part ``[attachment: NAME]``, so the prompt's names point at it. A tool
message can only hold text on the OpenAI wire, so a tool's attachments go in a user message right
after the turn's tool messages (what PydanticAI does: ``ToolReturnPart
.model_response_str_and_user_content``, "See file X" in the tool message, then the file; the OpenAI
Agents SDK's chat-completions converter drops them instead unless told to keep them in the tool
message, ``preserve_tool_output_all_content``, for providers that take that).
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Sequence
from typing import Any

from agentensemble.attachments import Attachment, Audio, Document, Image
from agentensemble.errors import LLMError, UntrustedInputError
from agentensemble.llm.types import (
    ATTACHMENTS_KEY,
    PROVIDER_KEY,
    ChatResponse,
    Message,
    ProviderPart,
    ToolCall,
    ToolSpec,
)
from agentensemble.outputs import TokenUsage
from agentensemble.redaction import redact_text
from agentensemble.untrusted import parse_json

#: Providers litellm converts into content blocks (Anthropic messages, Gemini parts, Bedrock
#: Converse): an assistant turn of only tool calls goes with no text at all, since an empty
#: string becomes an empty ``{"text": ""}`` part or litellm's "[System: Empty message content
#: sanitised...]" placeholder. Everyone else (the OpenAI wire: OpenAI, DeepSeek, Groq,
#: OpenRouter, vLLM, llama.cpp, Ollama...) gets ``""``: local servers' chat templates need it.
BLOCK_PROVIDERS = frozenset(
    {"anthropic", "gemini", "vertex_ai", "vertex_ai_beta", "bedrock", "bedrock_converse"}
)
#: Gemini's providers: thoughts and thought signatures go back, not Anthropic-style blocks.
GEMINI_PROVIDERS = frozenset({"gemini", "vertex_ai", "vertex_ai_beta"})
#: Providers that need explicit cache breakpoints; OpenAI-style caching is automatic.
BREAKPOINT_PROVIDERS = frozenset({"anthropic", "bedrock", "vertex_ai"})
#: Assistant-message fields a provider reads back (what ``ProviderPart.field`` may name).
PART_FIELDS = ("thinking_blocks", "reasoning_content", "provider_specific_fields")

_EPHEMERAL = {"type": "ephemeral"}


def field_of(obj: Any, name: str) -> Any:
    """Attribute or key access: litellm objects are both, providers' extras are dicts."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


#: The largest token count read from an answer: a reported count above it counts as this (still
#: past any budget), so ``10**400`` tokens neither overflow the price sum nor slip under a limit.
MAX_TOKEN_COUNT = 10**12


def count_of(value: Any) -> int:
    """A provider's token count, within ``0..MAX_TOKEN_COUNT``: an int (or a whole float, as some
    servers send), else 0 (``None``, a bool, a string, a missing field). A negative count is 0:
    it would subtract the tokens other calls of the run used from its ``UsageLimits``."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, float):
        value = int(value) if math.isfinite(value) else 0
    if not isinstance(value, int):
        return 0
    return min(max(value, 0), MAX_TOKEN_COUNT)


def items_of(value: Any) -> list[Any] | tuple[Any, ...]:
    """A field that should hold a list (``choices``, ``tool_calls``, thinking blocks), or ``()``:
    an answer's string is not walked character by character, nor a dict key by key."""
    return value if isinstance(value, (list, tuple)) else ()


def text_of(value: Any) -> str | None:
    """A field that should hold text (an id, a name), or None for anything else."""
    return value if isinstance(value, str) else None


def _plain(value: Any) -> Any:
    """A litellm object as plain JSON-like data (dicts, lists, strings), to keep and resend."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _plain(dump())
    return value


def read_usage(usage: Any) -> TokenUsage:
    """Token counts from any provider's usage shape, as litellm hands them on.

    Cached reads: ``prompt_tokens_details.cached_tokens`` (OpenAI, and litellm's Anthropic and
    Gemini mapping), ``cache_read_input_tokens`` (Anthropic), ``prompt_cache_hit_tokens``
    (DeepSeek). Cache writes: ``cache_creation_input_tokens`` (Anthropic) or
    ``prompt_tokens_details.cache_creation_tokens`` / ``cache_write_tokens`` (OpenAI). Reasoning:
    ``completion_tokens_details.reasoning_tokens``. Cached and written tokens are counted within
    ``prompt_tokens``, as providers report it (litellm adds Anthropic's in).
    """
    if usage is None:
        return TokenUsage()
    prompt = count_of(field_of(usage, "prompt_tokens"))
    completion = count_of(field_of(usage, "completion_tokens"))
    total = count_of(field_of(usage, "total_tokens")) or prompt + completion
    prompt_details = field_of(usage, "prompt_tokens_details")
    completion_details = field_of(usage, "completion_tokens_details")
    cached = (
        count_of(field_of(prompt_details, "cached_tokens"))
        or count_of(field_of(usage, "cache_read_input_tokens"))
        or count_of(field_of(usage, "prompt_cache_hit_tokens"))
    )
    written = (
        count_of(field_of(usage, "cache_creation_input_tokens"))
        or count_of(field_of(prompt_details, "cache_creation_tokens"))
        or count_of(field_of(prompt_details, "cache_write_tokens"))
    )
    reasoning = count_of(field_of(completion_details, "reasoning_tokens"))
    return TokenUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=total,
        cached_prompt_tokens=min(cached, prompt) if prompt else cached,
        cache_write_tokens=written,
        reasoning_tokens=reasoning,
    )


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return "{}"
    return json.dumps(arguments)


def read_call(raw: Any, provider: str) -> ToolCall:
    """One tool call, arguments verbatim; the provider's own fields on it kept to send back."""
    function = field_of(raw, "function")
    fields = provider_fields_of(raw, function)
    kept = {k: _plain(v) for k, v in fields.items() if v is not None}
    if kept:
        kept[PROVIDER_KEY] = provider
    return ToolCall(
        id=text_of(field_of(raw, "id")) or f"call_{uuid.uuid4().hex[:24]}",
        name=text_of(field_of(function, "name")) or "",
        arguments=_arguments_text(field_of(function, "arguments")),
        provider_fields=kept or None,
    )


def provider_fields_of(raw: Any, function: Any) -> dict[str, Any]:
    """A tool call's own provider fields (on the call or its function), when they are a dict."""
    fields = field_of(raw, "provider_specific_fields") or field_of(
        function, "provider_specific_fields"
    )
    return fields if isinstance(fields, dict) else {}


def read_parts(message: Any, provider: str) -> tuple[ProviderPart, ...]:
    """What the provider needs back from this turn, in the fields litellm reads back: Anthropic's
    thinking blocks with their signatures; Gemini's thoughts and thought signatures; the
    ``reasoning_content`` DeepSeek-style APIs take back."""
    reasoning = field_of(message, "reasoning_content")
    reasoning = reasoning if isinstance(reasoning, str) and reasoning else None
    if provider in GEMINI_PROVIDERS:
        parts: list[ProviderPart] = []
        if reasoning is not None:
            parts.append(ProviderPart(provider, "reasoning_content", reasoning))
        fields = field_of(message, "provider_specific_fields")
        signatures = items_of(field_of(fields, "thought_signatures"))
        if signatures:
            value = {"thought_signatures": _plain(signatures)}
            parts.append(ProviderPart(provider, "provider_specific_fields", value))
        return tuple(parts)
    blocks = items_of(field_of(message, "thinking_blocks"))
    if blocks:
        return (ProviderPart(provider, "thinking_blocks", _plain(blocks)),)
    if reasoning is not None and provider not in BLOCK_PROVIDERS:
        return (ProviderPart(provider, "reasoning_content", reasoning),)
    return ()


def read_refusal(message: Any) -> str | None:
    """The provider's refusal words (OpenAI ``message.refusal``), wherever litellm put them."""
    refusal = field_of(message, "refusal")
    if not refusal:
        refusal = field_of(field_of(message, "provider_specific_fields"), "refusal")
    return refusal if isinstance(refusal, str) and refusal else None


def read_response(response: Any, *, provider: str, label: str = "llm") -> ChatResponse:
    """Convert a litellm ``ModelResponse`` (or an OpenAI-shaped dict) into our ChatResponse."""
    choices = items_of(field_of(response, "choices"))
    if not choices:
        raise LLMError(f"{label}: the provider answered with no choices", attempts=1)
    choice = choices[0]
    message = field_of(choice, "message")
    content = field_of(message, "content")
    reasoning = field_of(message, "reasoning_content")
    return ChatResponse(
        content=content if isinstance(content, str) else None,
        tool_calls=[read_call(raw, provider) for raw in items_of(field_of(message, "tool_calls"))],
        usage=read_usage(field_of(response, "usage")),
        finish_reason=text_of(field_of(choice, "finish_reason")),
        model=text_of(field_of(response, "model")),
        reasoning=reasoning if isinstance(reasoning, str) and reasoning else None,
        refusal=read_refusal(message),
        provider_parts=read_parts(message, provider),
    )


def _object_arguments(call: Any) -> Any:
    """A tool call whose arguments are not a JSON object the untrusted parser takes (cut short,
    nested too deep, a 5,000-digit number, a list) with ``{}`` instead: litellm parses the
    arguments of every call in the history for the providers it builds blocks for, and failed
    every later request of the run on them (the executor has told the model already)."""
    function = call.get("function") if isinstance(call, dict) else None
    arguments = function.get("arguments") if isinstance(function, dict) else None
    if not isinstance(arguments, str):
        return call
    try:
        if isinstance(parse_json(arguments, what="the tool call's arguments"), dict):
            return call
    except UntrustedInputError:
        pass
    return {**call, "function": {**function, "arguments": "{}"}}  # type: ignore[dict-item]


def _outgoing_call(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call without the provider fields another provider gave it."""
    if "provider_specific_fields" not in call:
        return call
    return {key: value for key, value in call.items() if key != "provider_specific_fields"}


def content_part(attachment: Attachment) -> dict[str, Any]:
    """One attachment as an OpenAI-format content part (see the module doc)."""
    if isinstance(attachment, Image):
        url = attachment.url if attachment.url is not None else attachment.data_url()
        return {"type": "image_url", "image_url": {"url": url}}
    if isinstance(attachment, Document) and attachment.is_text and attachment.data is not None:
        return {"type": "text", "text": attachment.text()}
    if isinstance(attachment, Audio) and attachment.data is not None:
        audio = {"data": attachment.base64(), "format": attachment.format}
        return {"type": "input_audio", "input_audio": audio}
    file: dict[str, Any]
    if attachment.url is not None:
        file = {"file_id": attachment.url}
        if attachment.media_type:
            file["format"] = attachment.media_type
    else:
        file = {"file_data": attachment.data_url(), "filename": attachment.label}
    return {"type": "file", "file": file}


def attachment_parts(attachments: Sequence[Attachment]) -> list[dict[str, Any]]:
    """Each attachment as its name (``[attachment: NAME]``) and its content part."""
    parts: list[dict[str, Any]] = []
    for attachment in attachments:  # a name may come from a tool or a server: redacted
        parts.append({"type": "text", "text": redact_text(str(attachment))})
        parts.append(content_part(attachment))
    return parts


def input_kinds(messages: Sequence[Message]) -> dict[str, str]:
    """What a model must take to read ``messages``' attachments: ``{"image": label, "pdf": ...,
    "audio": ...}``, each with the first attachment needing it (text documents need nothing)."""
    kinds: dict[str, str] = {}
    for message in messages:
        for attachment in message.get(ATTACHMENTS_KEY) or ():
            if isinstance(attachment, Image):
                kinds.setdefault("image", attachment.label)
            elif isinstance(attachment, Audio):
                kinds.setdefault("audio", attachment.label)
            elif isinstance(attachment, Document) and not attachment.is_text:
                kinds.setdefault("pdf", attachment.label)
    return kinds


def holds_bytes(messages: Sequence[Message]) -> bool:
    """Whether any of ``messages``' attachments holds bytes (in memory, or kept in a durable
    run's database and not read yet): building their request reads and base64-encodes them.
    Reads no bytes itself (``size`` of kept bytes is their reference's)."""
    for message in messages:
        for attachment in message.get(ATTACHMENTS_KEY) or ():
            if attachment.size is not None:
                return True
    return False


def _with_parts(message: Message) -> Message:
    """A user or system message with attachments: its text, then the attachments' parts."""
    copy = {k: v for k, v in message.items() if k != ATTACHMENTS_KEY}
    text = copy.get("content")
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    copy["content"] = parts + attachment_parts(message[ATTACHMENTS_KEY])
    return copy


def _with_attachments(messages: Sequence[Message]) -> list[Message]:
    """The history with attachments as content parts; a tool turn's in one user message right
    after its tool messages (a tool message holds text only)."""
    sent: list[Message] = []
    pending: list[Attachment] = []
    for message in messages:
        role = message.get("role")
        if pending and role != "tool":
            sent.append({"role": "user", "content": attachment_parts(pending)})
            pending = []
        if not message.get(ATTACHMENTS_KEY):
            sent.append(message)
        elif role == "tool":
            pending += message[ATTACHMENTS_KEY]
            sent.append({k: v for k, v in message.items() if k != ATTACHMENTS_KEY})
        else:
            sent.append(_with_parts(message))
    if pending:
        sent.append({"role": "user", "content": attachment_parts(pending)})
    return sent


def outgoing_message(message: Message, provider: str | None) -> Message:
    """One history message as a request to ``provider`` sends it (see the module doc)."""
    if message.get("role") != "assistant":
        return message
    copy = dict(message)
    source = copy.pop(PROVIDER_KEY, None)
    if source != provider:  # another provider's parts: never sent where they are not known
        # (a message without a source has none: it was not built from a provider's answer)
        for name in PART_FIELDS:
            copy.pop(name, None)
    calls = copy.get("tool_calls")
    if calls and source != provider:
        copy["tool_calls"] = [_outgoing_call(c) if isinstance(c, dict) else c for c in calls]
    content = copy.get("content")
    if provider in BLOCK_PROVIDERS:
        if calls:
            copy["tool_calls"] = [_object_arguments(call) for call in copy["tool_calls"]]
        if not content and calls:
            copy["content"] = None  # no empty text block beside the calls
    elif content is None:
        copy["content"] = ""  # chat templates of local servers need a string
    return copy


def _cached_system(message: Message) -> Message:
    content = message.get("content")
    if isinstance(content, str) and content:
        blocks: list[Any] = [{"type": "text", "text": content, "cache_control": _EPHEMERAL}]
        return {**message, "content": blocks}
    return message


def outgoing(
    messages: Sequence[Message], provider: str | None, *, prompt_cache: bool = False
) -> list[Message]:
    """The history as a request to ``provider`` sends it; with ``prompt_cache`` and a provider
    that needs breakpoints, the system messages are marked as the cached prefix."""
    if any(ATTACHMENTS_KEY in message for message in messages):
        messages = _with_attachments(messages)
    sent = [outgoing_message(message, provider) for message in messages]
    if prompt_cache and provider in BREAKPOINT_PROVIDERS:
        sent = [_cached_system(m) if m.get("role") == "system" else m for m in sent]
    return sent


def outgoing_tools(
    tools: Sequence[ToolSpec], provider: str | None, *, prompt_cache: bool = False
) -> list[ToolSpec]:
    """Tool specs as sent; the last one carries the cache breakpoint for providers needing it
    (Anthropic caches everything up to and including the marked tool)."""
    sent = list(tools)
    if prompt_cache and sent and provider in BREAKPOINT_PROVIDERS:
        sent[-1] = {**sent[-1], "cache_control": _EPHEMERAL}
    return sent


__all__ = [
    "BLOCK_PROVIDERS",
    "BREAKPOINT_PROVIDERS",
    "MAX_TOKEN_COUNT",
    "attachment_parts",
    "content_part",
    "count_of",
    "field_of",
    "holds_bytes",
    "input_kinds",
    "items_of",
    "outgoing",
    "outgoing_message",
    "outgoing_tools",
    "read_call",
    "read_parts",
    "read_refusal",
    "read_response",
    "read_usage",
    "text_of",
]
