"""Files read as plain text for knowledge: text, Markdown, HTML, JSON, CSV, PDF (with pypdf).

Files are hostile input: each is bounded in size, decoded leniently (bad bytes replaced), and
parsed by ``agentensemble.untrusted`` (HTML by its linear converter, JSON bounded in depth and
size, PDF bounded in size, pages, text and time) or the standard library's CSV reader (no
scripts run, no entities fetched).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from agentensemble import untrusted
from agentensemble._base.regular_file import UnreadableFile, read_regular_file

TEXT_SUFFIXES = frozenset({".txt", ".text", ".md", ".markdown", ".rst", ".log"})
HTML_SUFFIXES = frozenset({".html", ".htm"})
SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | {".json", ".csv", ".pdf"}
MAX_FILE_BYTES = 20 * 1024 * 1024


def html_text(html: str) -> str:
    """The visible text of an HTML file, a paragraph per block (the bounded converter of
    ``agentensemble.untrusted``: linear on any page, where ``html.parser`` was quadratic)."""
    return "\n\n".join(untrusted.html_text(html, what="the HTML file").split("\n"))


def _json_lines(value: Any, path: str, out: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _json_lines(item, f"{path}.{key}" if path else str(key), out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _json_lines(item, f"{path}[{index}]", out)
        if not value:
            out.append(f"{path}: []")
    else:
        out.append(f"{path or '$'}: {json.dumps(value, ensure_ascii=False)}")


def json_text(raw: str) -> str:
    """Each value on a line of its own, with its path (``orders[0].status: "shipped"``)."""
    lines: list[str] = []
    _json_lines(untrusted.parse_json(raw, what="the JSON file"), "", lines)
    return "\n".join(lines)


def csv_text(raw: str) -> str:
    """Each row as ``column: value; column: value``; rows separated by blank lines."""
    rows = list(csv.reader(io.StringIO(raw)))
    if not rows:
        return ""
    header, body = rows[0], rows[1:]
    if not body:
        return "; ".join(header)
    out = []
    for row in body:
        pairs = [
            f"{name}: {value}" for name, value in zip(header, row, strict=False) if value.strip()
        ]
        out.append("; ".join(pairs))
    return "\n\n".join(out)


def pdf_text(path: Path, data: bytes) -> str:
    """The text of a PDF file, a paragraph per page (``agentensemble.untrusted.pdf_text``:
    bounded in size, pages, text and time; a broken file is one error naming it)."""
    try:
        return untrusted.pdf_text(data, what=str(path), max_bytes=MAX_FILE_BYTES)
    except untrusted.UntrustedInputError as error:
        raise ValueError(f"{path}: cannot be read as PDF: {error.reason}") from error


def read_bytes(path: Path, *, follow_symlinks: bool = True) -> bytes:
    """A knowledge file's bytes: a regular file (never a FIFO or device, which would block or
    never end), at most ``MAX_FILE_BYTES``; ``ValueError`` naming the file otherwise."""
    try:
        return read_regular_file(path, max_bytes=MAX_FILE_BYTES, follow_symlinks=follow_symlinks)
    except UnreadableFile as error:
        raise ValueError(f"{path}: {error.reason}; knowledge files are regular files") from None


def read_text(path: Path, data: bytes | None = None) -> str:
    """The text of one knowledge file (its ``data`` when already read); ``ValueError`` naming
    the file when it cannot be read."""
    suffix = path.suffix.lower()
    data = read_bytes(path) if data is None else data
    if suffix == ".pdf":
        return pdf_text(path, data)
    raw = data.decode("utf-8-sig", errors="replace")
    try:
        if suffix in HTML_SUFFIXES:
            return html_text(raw)
        if suffix == ".json":
            return json_text(raw)
        if suffix == ".csv":
            return csv_text(raw)
    except (ValueError, csv.Error, RecursionError) as error:
        why = error.reason if isinstance(error, untrusted.UntrustedInputError) else error
        raise ValueError(f"{path}: cannot be read as {suffix[1:].upper()}: {why}") from error
    return raw


def chunks(text: str, size: int) -> list[str]:
    """Paragraphs packed into chunks of at most ``size`` characters (a longer paragraph is cut
    at whitespace)."""
    pieces: list[str] = []
    for paragraph in (p.strip() for p in text.split("\n\n")):
        while len(paragraph) > size:
            cut = paragraph.rfind(" ", size // 2, size)
            cut = cut if cut > 0 else size
            pieces.append(paragraph[:cut].strip())
            paragraph = paragraph[cut:].strip()
        if paragraph:
            pieces.append(paragraph)
    out: list[str] = []
    for piece in pieces:
        if out and len(out[-1]) + 2 + len(piece) <= size:
            out[-1] += "\n\n" + piece
        else:
            out.append(piece)
    return out


__all__ = ["MAX_FILE_BYTES", "SUFFIXES", "chunks", "read_bytes", "read_text"]
