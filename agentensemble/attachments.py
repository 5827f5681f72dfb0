"""Images, documents and audio an agent is given: ``Image``, ``Document``, ``Audio``.

Each is made from exactly one of ``url=``, ``data=`` (bytes) or ``path=`` (a file this process
reads when the attachment is made: the user's path, never a model's). ``media_type`` is guessed
from the bytes' first bytes (PNG, JPEG, GIF, WebP, PDF, WAV, MP3...) or the file name when not
given, and must be of the attachment's kind. Bytes are bounded (``MAX_ATTACHMENT_BYTES``).

This module owns the attachment values: the classes, their checks of kind and media type, how
they show, how they pickle (by this module's path, into DBOS checkpoints: ``_rebuild``, ``_Kept``
and the keeping of their bytes by digest), and the helpers for lists of them. Checking and reading
a source and guessing a media type are ``_base/attachment_sources.py``'s (``sniff`` and
``MAX_ATTACHMENT_BYTES`` are re-exported here, where users import them).

An attachment never shows its bytes: its ``repr`` (what traces, events and logs show) is a short
description, ``[image: chart.png, png, 12 kB, sha256:1a2b3c4d]``; ``str`` is how a prompt names
it, ``[attachment: chart.png]``. Stdlib only, cheap to import; how an attachment is sent to a
provider is ``llm/_messages.py``'s business.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, ClassVar

from agentensemble._base.attachment_sources import (
    MAX_ATTACHMENT_BYTES,
    by_name,
    check_size,
    check_url,
    read_path,
    sniff,
)

#: An attachment's fields, in the order ``Attachment._state`` gives them (pickling, copies).
_FIELDS = ("url", "_data", "path", "media_type", "name")


def _size_text(size: int) -> str:
    if size < 1000:
        return f"{size} B"
    if size < 1_000_000:
        return f"{size / 1000:.0f} kB"
    return f"{size / 1_000_000:.1f} MB"


class Attachment:
    """What ``Image``, ``Document`` and ``Audio`` share: one source, a media type, bytes bounded.

    Immutable; equal when kind, source and media type are. ``name`` is how prompts and traces
    call it (``Document(name=...)``, else the file name of ``path`` or ``url``)."""

    kind: ClassVar[str] = "attachment"
    __slots__ = ("_data", "media_type", "name", "path", "url")

    url: str | None
    _data: bytes | _Kept | None
    path: Path | None
    media_type: str | None
    name: str | None

    def __init__(
        self,
        *,
        url: str | None = None,
        data: bytes | None = None,
        path: str | Path | None = None,
        media_type: str | None = None,
    ) -> None:
        """Exactly one of ``url``, ``data``, ``path``; ``media_type`` guessed if not given
        (``Image`` and ``Audio`` take these; ``Document`` adds ``name``)."""
        self._setup(url, data, path, media_type, None)

    def _setup(
        self,
        url: str | None,
        data: bytes | bytearray | memoryview | None,
        path: str | Path | None,
        media_type: str | None,
        name: str | None,
    ) -> None:
        kind = type(self).__name__
        given = [n for n, v in (("url", url), ("data", data), ("path", path)) if v is not None]
        if not given:
            raise ValueError(f"{kind} needs one of url=, data= or path=; none was given")
        if len(given) > 1:
            raise ValueError(
                f"{kind} takes exactly one of url=, data=, path=; got "
                + " and ".join(f"{n}=" for n in given)
            )
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ValueError(f"{kind} name= must be a non-empty str; got {name!r}")
        if media_type is not None and (not isinstance(media_type, str) or "/" not in media_type):
            raise ValueError(
                f"{kind} media_type= must be a type like 'image/png'; got {media_type!r}"
            )
        read: bytes | None = None
        file: Path | None = None
        if url is not None:
            check_url(kind, url)
        elif data is not None:
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise TypeError(f"{kind} data= takes bytes; got {type(data).__name__}")
            read = bytes(data)
            check_size(kind, "data=", len(read))
        else:
            file, read = read_path(kind, path)
        set_ = object.__setattr__
        set_(self, "url", url)
        set_(self, "_data", read)
        set_(self, "path", file)
        set_(self, "name", name.strip() if name is not None else None)
        set_(self, "media_type", self._media_type(media_type, url, read, file))

    def _media_type(
        self, given: str | None, url: str | None, data: bytes | None, path: Path | None
    ) -> str | None:
        """The media type given, else guessed; checked against the kind."""
        kind = type(self).__name__
        source = "url" if url is not None else "path" if path is not None else "data"
        media_type = given.lower().strip() if given is not None else None
        if media_type is None and data is not None:
            media_type = sniff(data)
        if media_type is None and path is not None:
            media_type = by_name(path.name)
        if media_type is None and url is not None:
            media_type = by_name(url.split("://", 1)[-1].split("/", 1)[-1])
        if media_type is None and data is not None:
            media_type = self._fallback_type(data)
        if media_type is None:
            if url is not None and self.url_needs_no_type:
                return None
            raise ValueError(
                f"{kind}: the media type of its {source} could not be guessed; pass "
                f"media_type= (one of {', '.join(self.accepted)})"
            )
        if not self.accepts(media_type):
            raise ValueError(
                f"{kind} cannot hold {media_type!r} (from its {source}); it takes "
                f"{', '.join(self.accepted)}"
            )
        return media_type

    #: Media types (or ``type/*`` families) this kind takes, for ``accepts`` and error messages.
    accepted: ClassVar[tuple[str, ...]] = ()
    #: Whether a URL whose type cannot be guessed is kept (the provider reads its type).
    url_needs_no_type: ClassVar[bool] = False

    def accepts(self, media_type: str) -> bool:
        """Whether ``media_type`` is one this kind takes."""
        family = media_type.split("/", 1)[0] + "/*"
        return media_type in self.accepted or family in self.accepted

    def _fallback_type(self, data: bytes) -> str | None:
        """A last guess for bytes no magic matched (documents: UTF-8 text)."""
        return None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        keep = _keeping.get()
        if keep is None or self._data is None:
            return (_rebuild, (type(self), self._state()))
        kept = self._data
        if not isinstance(kept, _Kept):  # its bytes handed over, only a reference pickled
            data = kept
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            kept = _Kept(digest, len(data), keep(digest, data))
        state = (self.url, kept, self.path, self.media_type, self.name)
        return (_rebuild, (type(self), state))

    def _state(self) -> tuple[Any, ...]:
        return (self.url, self.data, self.path, self.media_type, self.name)

    def __copy__(self) -> Attachment:
        return self  # immutable: a copy is itself (and never goes through pickling's hook)

    def __deepcopy__(self, memo: dict[int, Any]) -> Attachment:
        return self

    @property
    def data(self) -> bytes | None:
        """Its bytes (None for a URL); bytes kept by digest (a durable checkpoint's) are read
        once, when first asked for."""
        found = self._data
        if isinstance(found, _Kept):
            found = found.load()
            object.__setattr__(self, "_data", found)
        return found

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Attachment)
        return self._state() == other._state()

    def __hash__(self) -> int:
        return hash((type(self), self._state()))

    @property
    def size(self) -> int | None:
        """How many bytes it holds (None for a URL: the provider reads it)."""
        found = self._data
        if isinstance(found, _Kept):
            return found.size
        return None if found is None else len(found)

    @property
    def digest(self) -> str | None:
        """``sha256:`` and the hex digest of its bytes (None for a URL)."""
        found = self._data
        if isinstance(found, _Kept):
            return found.digest
        if found is None:
            return None
        return "sha256:" + hashlib.sha256(found).hexdigest()

    @property
    def label(self) -> str:
        """How a prompt names it: ``name``, else the file name of its path or URL, else its kind."""
        if self.name:
            return self.name
        if self.path is not None:
            return self.path.name
        if self.url is not None:
            tail = self.url.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
            if tail and "." in tail:
                return tail
        return self.kind

    def named(self, name: str) -> Attachment:
        """A copy called ``name`` (how a run input is named after its variable)."""
        copy = object.__new__(type(self))
        for slot in _FIELDS:  # kept bytes stay unread
            object.__setattr__(copy, slot, object.__getattribute__(self, slot))
        object.__setattr__(copy, "name", name)
        return copy

    def with_data(self, data: bytes) -> Attachment:
        """A copy holding ``data`` instead (same kind, type and name; no path: not the file's)."""
        copy = self.named(self.label)  # the file's name kept: the path goes
        object.__setattr__(copy, "_data", data)
        object.__setattr__(copy, "path", None)
        return copy

    def base64(self) -> str:
        """Its bytes in base64 (ValueError for a URL attachment: it has none here)."""
        if self.data is None:
            raise ValueError(f"{self!r} is a URL: it has no bytes here")
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        """``data:<media type>;base64,...``: how its bytes go inline in a request."""
        return f"data:{self.media_type};base64,{self.base64()}"

    def describe(self) -> str:
        """The short description traces and events show: never the bytes, never a whole URL."""
        subtype = (self.media_type or "unknown").split("/", 1)[-1]
        if self.url is not None:
            from agentensemble.redaction import redact_text  # a signed URL's token stays out

            host = self.url.split("://", 1)[-1].split("/", 1)[0]
            shown = redact_text(f"{host}/…/{self.label}" if self.label != self.kind else host)
            return f"[{self.kind}: {subtype}, url {shown}]"
        parts = [self.label] if self.label != self.kind else []
        parts += [subtype, _size_text(self.size or 0), (self.digest or "")[:15]]
        return f"[{self.kind}: {', '.join(parts)}]"

    def __repr__(self) -> str:
        return self.describe()

    def __str__(self) -> str:
        return f"[attachment: {self.label}]"


def _rebuild(cls: type[Attachment], state: tuple[Any, ...]) -> Attachment:
    """Unpickle without reading or checking again (the state was checked when made)."""
    attachment = object.__new__(cls)
    for slot, value in zip(_FIELDS, state, strict=True):
        object.__setattr__(attachment, slot, value)
    return attachment


class _Kept:
    """Bytes kept elsewhere by digest (a durable run's database), in place of an attachment's
    own: what a checkpoint holds. Loaded through this process's ``reading_kept_bytes`` source.
    ``owner``: what the keeper said keeps them (a durable run's id), for errors."""

    __slots__ = ("digest", "owner", "size")

    def __init__(self, digest: str, size: int, owner: str | None = None) -> None:
        self.digest = digest
        self.size = size
        self.owner = owner

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Kept, (self.digest, self.size, self.owner))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Kept) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def load(self) -> bytes:
        source = _source
        if source is None:
            raise ValueError(
                f"an attachment's bytes ({self.digest}, {self.size} bytes) are kept in a durable "
                "run's database, and this process reads none: open the DurableRuntime or "
                "DurableClient of that database first"
            )
        data = source(self.digest, self.size, self.owner)
        if len(data) != self.size or "sha256:" + hashlib.sha256(data).hexdigest() != self.digest:
            raise ValueError(
                f"the bytes kept for attachment {self.digest} ({self.size} bytes) do not match "
                f"their digest ({len(data)} bytes read): the durable database was altered"
            )
        return data


#: While set (``keeping_bytes``), pickling an attachment hands its bytes here and keeps a
#: reference; outside, an attachment pickles whole.
_keeping: ContextVar[Callable[[str, bytes], str | None] | None] = ContextVar(
    "agentensemble_keeping_bytes", default=None
)
#: Where this process reads kept bytes back: ``source(digest, size, owner)``.
_source: Callable[[str, int, str | None], bytes] | None = None


@contextmanager
def keeping_bytes(keep: Callable[[str, bytes], str | None] | None) -> Iterator[None]:
    """In the block, pickling an attachment that holds bytes calls ``keep(digest, data)`` and
    pickles only its digest, size and what ``keep`` returns (who keeps them: a run's id, for
    errors). The durable runtime keeps them in its database, once per digest, before the
    checkpoint that refers to them is written; ``keep`` raises to refuse. ``None``: pickle
    whole in the block (a step's own work, inside the runtime's keeping)."""
    token = _keeping.set(keep)
    try:
        yield
    finally:
        _keeping.reset(token)


def reading_kept_bytes(source: Callable[[str, int, str | None], bytes] | None) -> None:
    """Make this process read attachments' kept bytes with ``source(digest, size, owner)``
    (None: none can be read); an unpickled reference loads its bytes when first asked for."""
    global _source
    _source = source


class Image(Attachment):
    """An image for a model that sees: ``Image(path="chart.png")``, ``Image(url=...)``,
    ``Image(data=png_bytes)``. Exactly one of url / data / path."""

    kind: ClassVar[str] = "image"
    accepted: ClassVar[tuple[str, ...]] = ("image/png", "image/jpeg", "image/gif", "image/webp")
    url_needs_no_type: ClassVar[bool] = True
    __slots__ = ()


class Document(Attachment):
    """A PDF or a text file: ``Document(path="invoice.pdf")``. Text documents (``text/*``) go to
    the model as text; PDFs as file parts, to models that take them."""

    kind: ClassVar[str] = "document"
    accepted: ClassVar[tuple[str, ...]] = ("application/pdf", "text/*", "application/json")
    __slots__ = ()

    def __init__(
        self,
        *,
        url: str | None = None,
        data: bytes | None = None,
        path: str | Path | None = None,
        media_type: str | None = None,
        name: str | None = None,
    ) -> None:
        """Exactly one of ``url``, ``data``, ``path``; ``name`` is how prompts call it."""
        self._setup(url, data, path, media_type, name)

    def _fallback_type(self, data: bytes) -> str | None:
        if b"\x00" in data:
            return None
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return "text/plain"

    @property
    def is_text(self) -> bool:
        """Whether it is text (sent as a text part) rather than a PDF."""
        return self.media_type is not None and (
            self.media_type.startswith("text/") or self.media_type == "application/json"
        )

    def text(self) -> str:
        """Its text, decoded as UTF-8 (undecodable bytes replaced)."""
        if self.data is None:
            raise ValueError(f"{self!r} is a URL: it has no text here")
        return self.data.decode("utf-8", errors="replace")


class Audio(Attachment):
    """A sound for a model that hears: ``Audio(path="call.wav")``."""

    kind: ClassVar[str] = "audio"
    accepted: ClassVar[tuple[str, ...]] = ("audio/*",)
    __slots__ = ()

    @property
    def format(self) -> str:
        """The format name OpenAI's ``input_audio`` takes: ``wav``, ``mp3``, ``flac``..."""
        subtype = (self.media_type or "audio/wav").split("/", 1)[1]
        return {"mpeg": "mp3", "x-wav": "wav", "wave": "wav", "vnd.wave": "wav"}.get(
            subtype, subtype
        )


def named_for(attachment: Attachment, variable: str) -> Attachment:
    """``attachment`` as a template variable shows it: its name, else its file's name, else the
    variable's (``{invoice}`` holding ``Document(data=...)`` is ``[attachment: invoice]``)."""
    if attachment.name:
        return attachment
    label = attachment.label
    return attachment.named(label if label != attachment.kind else variable)


def distinct(attachments: Iterable[Attachment]) -> list[Attachment]:
    """``attachments`` with names told apart where two share one (``image``, ``image 2``), so
    each ``[attachment: NAME]`` points at one; the first of a name keeps it."""
    seen: dict[str, int] = {}
    named: list[Attachment] = []
    for attachment in attachments:
        label = attachment.label
        seen[label] = count = seen.get(label, 0) + 1
        named.append(attachment.named(f"{label} {count}") if count > 1 else attachment)
    return named


def redacted_documents(
    attachments: tuple[Attachment, ...], redact: Callable[[str], str]
) -> tuple[Attachment, ...]:
    """``attachments`` with each text document's text passed through ``redact`` (what a tool
    returns is redacted before the model sees it; images and PDFs are left byte for byte).
    The same tuple when nothing changed."""
    changed = False
    kept: list[Attachment] = []
    for attachment in attachments:
        if isinstance(attachment, Document) and attachment.is_text and attachment.data:
            text = attachment.text()
            shown = redact(text)
            if shown != text:
                changed = True
                attachment = attachment.with_data(shown.encode("utf-8"))
        kept.append(attachment)
    return tuple(kept) if changed else attachments


def attachment_list(value: Any, field: str) -> list[Attachment]:
    """``value`` as a list of attachments, or ValueError naming ``field`` and the position."""
    if isinstance(value, Attachment):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ValueError(
            f"{field} takes a list of Image, Document or Audio; got {type(value).__name__}"
        )
    for position, item in enumerate(value):
        if not isinstance(item, Attachment):
            raise ValueError(
                f"{field}[{position}] is a {type(item).__name__}; it takes Image, Document "
                "or Audio (e.g. Image(path='chart.png'))"
            )
    return list(value)


__all__ = [
    "MAX_ATTACHMENT_BYTES",
    "Attachment",
    "Audio",
    "Document",
    "Image",
    "attachment_list",
    "distinct",
    "keeping_bytes",
    "named_for",
    "reading_kept_bytes",
    "redacted_documents",
    "sniff",
]
