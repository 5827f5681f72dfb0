"""Files read as plain text for knowledge: text, Markdown, HTML, JSON, CSV (PDF with pypdf).

Files are hostile input: each is bounded in size, decoded leniently (bad bytes replaced), and
parsed with the standard library's parsers only (no scripts run, no entities fetched).
"""

from __future__ import annotations

import csv
import io
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

TEXT_SUFFIXES = frozenset({".txt", ".text", ".md", ".markdown", ".rst", ".log"})
HTML_SUFFIXES = frozenset({".html", ".htm"})
SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | {".json", ".csv", ".pdf"}
MAX_FILE_BYTES = 20 * 1024 * 1024
_SKIPPED_TAGS = frozenset({"script", "style", "noscript", "template", "svg"})
_BLOCK_TAGS = frozenset(
    {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article",
     "pre", "blockquote", "table", "ul", "ol", "hr", "title"}
)  # fmt: skip


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in _SKIPPED_TAGS:
            self._skipping += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS:
            self._skipping = max(0, self._skipping - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def html_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).split("\n"))
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.strip()


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
    _json_lines(json.loads(raw), "", lines)
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


def pdf_text(path: Path) -> str:
    try:
        from pypdf import PdfReader
    except ImportError as error:
        raise ValueError(
            f"{path}: reading PDF files needs pypdf: pip install 'agentensemble-py[pdf]'"
        ) from error
    reader = PdfReader(str(path))
    return "\n\n".join((page.extract_text() or "").strip() for page in reader.pages)


def read_text(path: Path) -> str:
    """The text of one knowledge file; ``ValueError`` naming the file when it cannot be read."""
    suffix = path.suffix.lower()
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"{path}: {size} bytes; knowledge files may be at most {MAX_FILE_BYTES}")
    if suffix == ".pdf":
        return pdf_text(path)
    raw = path.read_bytes().decode("utf-8-sig", errors="replace")
    try:
        if suffix in HTML_SUFFIXES:
            return html_text(raw)
        if suffix == ".json":
            return json_text(raw)
        if suffix == ".csv":
            return csv_text(raw)
    except (ValueError, csv.Error, RecursionError) as error:
        raise ValueError(f"{path}: cannot be read as {suffix[1:].upper()}: {error}") from error
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


__all__ = ["MAX_FILE_BYTES", "SUFFIXES", "chunks", "read_text"]
