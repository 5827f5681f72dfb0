"""What an MCP server's resources and prompts become: small frozen records of bounded, redacted
text and bytes, never the SDK's objects.

A server is untrusted: its names, descriptions, resource texts and prompt messages are cut to
bounds (a note says so), stripped of hidden characters and redacted (a secret a server echoes
shows as ``***``); listings stop at ``MAX_LISTED`` items. None of it is ever an instruction to
our model: a resource's text reaches a task only as data (knowledge, context, an attachment),
and a prompt becomes a task's description only when the caller chooses to, with its braces
escaped so it cannot read the run's inputs through template variables.
"""

from __future__ import annotations

import base64
import binascii
import importlib
from collections.abc import Mapping
from typing import Any

from agentensemble._base.dataclass import dataclass
from agentensemble.redaction import drop_hidden, redact_text

MAX_LISTED = 1_000
MAX_NAME_CHARS = 200
MAX_DESCRIPTION_CHARS = 4_000
DEFAULT_MAX_RESOURCE_BYTES = 5_000_000
MAX_PROMPT_ARGUMENTS = 50
MAX_PROMPT_ARGUMENT_CHARS = 100_000


def clean(value: object, limit: int) -> str:
    """Server text as we pass it on: hidden characters dropped, secrets redacted, cut."""
    text = drop_hidden(str(value if value is not None else ""))
    if len(text) > limit:
        text = text[:limit] + f"\n[cut at {limit} characters]"
    return redact_text(text)


def _optional(value: object, limit: int) -> str | None:
    return None if value is None else clean(value, limit)


@dataclass(frozen=True)
class MCPResource:
    """One resource a server lists: ``uri``, ``name``, ``description``, ``mime_type``."""

    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None


@dataclass(frozen=True)
class MCPResourceContent:
    """One part of a read resource: ``text`` for a text resource, ``data`` (bytes) for a binary
    one, with its ``mime_type``. ``text`` is redacted and cut to the server's ``max_output_chars``
    (``truncated`` says so); binary content over ``max_resource_bytes`` is refused."""

    uri: str
    mime_type: str | None
    text: str | None = None
    data: bytes | None = None
    truncated: bool = False

    @property
    def is_binary(self) -> bool:
        return self.data is not None

    def as_attachment(self) -> Any:
        """This content for ``Task(attachments=[...])``: an ``Image`` for ``image/*``, an
        ``Audio`` for ``audio/*``, else a ``Document`` (a text resource as UTF-8 bytes)."""
        attachments = importlib.import_module("agentensemble.attachments")
        data = self.data if self.data is not None else (self.text or "").encode("utf-8")
        media = self.mime_type or ("application/octet-stream" if self.is_binary else "text/plain")
        if media.startswith("image/"):
            return attachments.Image(data=data, media_type=media)
        if media.startswith("audio/"):
            return attachments.Audio(data=data, media_type=media)
        return attachments.Document(data=data, media_type=media, name=self.uri)

    def __repr__(self) -> str:
        size = (
            f"{len(self.data)} bytes" if self.data is not None else f"{len(self.text or '')} chars"
        )
        return f"MCPResourceContent(uri={self.uri!r}, mime_type={self.mime_type!r}, {size})"


@dataclass(frozen=True)
class MCPPromptArgument:
    name: str
    description: str | None = None
    required: bool = False


@dataclass(frozen=True)
class MCPPrompt:
    """One prompt a server lists, with the arguments it takes."""

    name: str
    description: str | None = None
    arguments: tuple[MCPPromptArgument, ...] = ()


@dataclass(frozen=True)
class MCPPromptMessage:
    role: str
    text: str


@dataclass(frozen=True)
class MCPPromptResult:
    """A prompt as the server filled it: its messages as text (non-text parts described)."""

    name: str
    description: str | None
    messages: tuple[MCPPromptMessage, ...]

    @property
    def text(self) -> str:
        """Every message's text, joined by blank lines."""
        return "\n\n".join(message.text for message in self.messages if message.text)

    def as_description(self) -> str:
        """The prompt's text as a ``Task(description=...)``: braces doubled, so the server's text
        is taken as written and cannot pull the run's inputs in through ``{variables}``."""
        return self.text.replace("{", "{{").replace("}", "}}")


def resources_from(listed: list[Any]) -> list[MCPResource]:
    return [
        MCPResource(
            uri=clean(getattr(item, "uri", ""), MAX_NAME_CHARS * 10),
            name=clean(getattr(item, "name", ""), MAX_NAME_CHARS),
            description=_optional(getattr(item, "description", None), MAX_DESCRIPTION_CHARS),
            mime_type=_optional(getattr(item, "mime_type", None), MAX_NAME_CHARS),
        )
        for item in listed[:MAX_LISTED]
    ]


def prompts_from(listed: list[Any]) -> list[MCPPrompt]:
    return [
        MCPPrompt(
            name=clean(getattr(item, "name", ""), MAX_NAME_CHARS),
            description=_optional(getattr(item, "description", None), MAX_DESCRIPTION_CHARS),
            arguments=tuple(
                MCPPromptArgument(
                    name=clean(getattr(argument, "name", ""), MAX_NAME_CHARS),
                    description=_optional(
                        getattr(argument, "description", None), MAX_DESCRIPTION_CHARS
                    ),
                    required=bool(getattr(argument, "required", False)),
                )
                for argument in (getattr(item, "arguments", None) or [])[:MAX_PROMPT_ARGUMENTS]
            ),
        )
        for item in listed[:MAX_LISTED]
    ]


class ResourceTooLarge(ValueError):
    """A binary resource over the server's ``max_resource_bytes``."""


def contents_from(
    result: Any, max_chars: int, max_bytes: int, label: str
) -> list[MCPResourceContent]:
    """A ``ReadResourceResult`` as bounded records (at most ``MAX_LISTED`` parts; text cut at
    ``max_chars`` in all, binary over ``max_bytes`` in all refused)."""
    parts: list[MCPResourceContent] = []
    chars_left, bytes_left = max_chars, max_bytes
    for item in (getattr(result, "contents", None) or [])[:MAX_LISTED]:
        uri = clean(getattr(item, "uri", ""), MAX_NAME_CHARS * 10)
        mime = _optional(getattr(item, "mime_type", None), MAX_NAME_CHARS)
        blob = getattr(item, "blob", None)
        if isinstance(blob, str):
            if len(blob) * 3 // 4 > bytes_left:
                raise ResourceTooLarge(
                    f"{label}: resource {uri!r} is over {max_bytes} bytes (max_resource_bytes)"
                )
            try:
                data = base64.b64decode(blob, validate=True)
            except (binascii.Error, ValueError):
                raise ValueError(f"{label}: resource {uri!r} is not valid base64") from None
            bytes_left -= len(data)
            parts.append(MCPResourceContent(uri=uri, mime_type=mime, data=data))
            continue
        raw = str(getattr(item, "text", "") or "")
        cut = len(raw) > chars_left
        text = clean(raw[: max(chars_left, 0)], max(chars_left, 0) + 1)
        if cut:
            text += f"\n[resource cut at {max_chars} characters]"
        chars_left -= min(len(raw), chars_left)
        parts.append(MCPResourceContent(uri=uri, mime_type=mime, text=text, truncated=cut))
    return parts


def prompt_from(name: str, result: Any, max_chars: int) -> MCPPromptResult:
    """A ``GetPromptResult`` as text messages, cut at ``max_chars`` in all."""
    messages: list[MCPPromptMessage] = []
    left = max_chars
    for message in (getattr(result, "messages", None) or [])[:MAX_LISTED]:
        if left <= 0:
            messages.append(MCPPromptMessage("user", f"[prompt cut at {max_chars} characters]"))
            break
        text = content_text(getattr(message, "content", None))
        messages.append(
            MCPPromptMessage(clean(getattr(message, "role", "user"), 20), clean(text, left))
        )
        left -= len(text)
    return MCPPromptResult(
        name=name,
        description=_optional(getattr(result, "description", None), MAX_DESCRIPTION_CHARS),
        messages=tuple(messages),
    )


def content_text(item: Any) -> str:
    """One content block as text; images, audio and binary resources described, not inlined."""
    kind = getattr(item, "type", None)
    if kind == "text":
        return str(getattr(item, "text", ""))
    if kind in ("image", "audio"):
        return f"[{kind} {getattr(item, 'mime_type', None) or 'of unknown type'}]"
    if kind == "resource":
        resource = getattr(item, "resource", None)
        text = getattr(resource, "text", None)
        return (
            str(text)
            if isinstance(text, str)
            else f"[binary resource {getattr(resource, 'uri', '')}]"
        )
    return f"[{kind or 'unknown'} content]"


def prompt_arguments(name: str, arguments: Mapping[str, Any] | None) -> dict[str, str]:
    """The caller's arguments as the strings MCP sends; ValueError naming what is wrong."""
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        raise ValueError(f"get_prompt({name!r}): args must be a dict of strings, got {arguments!r}")
    sent: dict[str, str] = {}
    for key, value in arguments.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValueError(
                f"get_prompt({name!r}): argument {key!r} must be a string, got "
                f"{type(value).__name__}"
            )
        if len(value) > MAX_PROMPT_ARGUMENT_CHARS:
            raise ValueError(
                f"get_prompt({name!r}): argument {key!r} is over "
                f"{MAX_PROMPT_ARGUMENT_CHARS} characters"
            )
        sent[key] = value
    return sent


__all__ = [
    "MCPPrompt",
    "MCPPromptArgument",
    "MCPPromptMessage",
    "MCPPromptResult",
    "MCPResource",
    "MCPResourceContent",
]
