"""An attachment's source, checked and read: the one place that says what ``url=``, ``data=``
and ``path=`` may hold, reads a file (bounded, once) and guesses a media type from bytes or a
file name.

Stdlib only, cheap to import. It never builds an attachment, never keeps or loads bytes for a
durable checkpoint (``attachments.py`` owns both: its classes are pickled by that path), and never
decides which media types a kind takes (each class's ``accepted``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

_MIB = 1024 * 1024
#: The most bytes one attachment may hold (20 MiB: OpenAI's bound for an image in a request).
MAX_ATTACHMENT_BYTES = 20 * _MIB

#: The first bytes of the formats we recognise, and their media types.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"ID3", "audio/mpeg"),
    (b"\xff\xfb", "audio/mpeg"),
    (b"\xff\xf3", "audio/mpeg"),
    (b"\xff\xf2", "audio/mpeg"),
    (b"fLaC", "audio/flac"),
    (b"OggS", "audio/ogg"),
)

#: File suffixes the platform's ``mimetypes`` table may not know.
_SUFFIXES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".webp": "image/webp",
    ".flac": "audio/flac",
    ".m4a": "audio/mp4",
    ".yaml": "text/yaml",
    ".yml": "text/yaml",
}


def sniff(data: bytes) -> str | None:
    """The media type the first bytes of ``data`` show, if we recognise them."""
    for magic, media_type in _MAGIC:
        if data.startswith(magic):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    return None


def by_name(name: str) -> str | None:
    """The media type a file name's suffix says (``mimetypes``, then our own table)."""
    suffix = os.path.splitext(name.split("?", 1)[0].split("#", 1)[0])[1].lower()
    if not suffix:
        return None
    if suffix in _SUFFIXES:
        return _SUFFIXES[suffix]
    import mimetypes  # stdlib, read its tables only when a name must be looked up

    guessed, _ = mimetypes.guess_type(f"file{suffix}", strict=False)
    return guessed


def check_url(kind: str, url: Any) -> None:
    """An http(s) URL, else TypeError or ValueError naming ``kind``'s ``url=``."""
    if not isinstance(url, str):
        raise TypeError(f"{kind} url= takes a str; got {type(url).__name__}")
    if not url.startswith(("https://", "http://")):
        shown = url[:40] + ("…" if len(url) > 40 else "")
        raise ValueError(
            f"{kind} url= must be an http(s) URL; got {shown!r} (bytes go in data=, a local "
            "file in path=)"
        )


def check_size(kind: str, field: str, size: int) -> None:
    """``size`` bytes within ``MAX_ATTACHMENT_BYTES`` and not none, else ValueError naming
    ``field``."""
    if size > MAX_ATTACHMENT_BYTES:
        raise ValueError(
            f"{kind} {field} holds {size / _MIB:.1f} MiB; an attachment holds at most "
            f"{MAX_ATTACHMENT_BYTES / _MIB:.0f} MiB"
        )
    if size == 0:
        raise ValueError(f"{kind} {field} is empty")


def read_path(kind: str, path: Any) -> tuple[Path, bytes]:
    """The file's bytes, read once now: its size checked before reading."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"{kind} path= takes a str or a Path; got {type(path).__name__}")
    file = Path(path)
    try:
        stat = file.stat()
    except FileNotFoundError:
        raise ValueError(f"{kind} path= {str(file)!r}: no such file") from None
    except OSError as error:
        raise ValueError(f"{kind} path= {str(file)!r} cannot be read: {error.strerror}") from None
    if not file.is_file():
        raise ValueError(f"{kind} path= {str(file)!r} is not a file")
    check_size(kind, f"path= {str(file)!r}", stat.st_size)
    try:
        data = file.read_bytes()
    except OSError as error:
        raise ValueError(f"{kind} path= {str(file)!r} cannot be read: {error.strerror}") from None
    check_size(kind, f"path= {str(file)!r}", len(data))  # it may have grown since
    return file, data


__all__ = ["MAX_ATTACHMENT_BYTES", "by_name", "check_size", "check_url", "read_path", "sniff"]
