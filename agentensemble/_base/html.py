"""HTML to readable text: tags dropped, scripts and styles skipped, blocks on their own lines.

A fetched page or a knowledge file is hostile input (read through ``agentensemble.untrusted``).
``html.parser`` rescans unfinished constructs and is quadratic on some pages (a megabyte held a
thread for an hour), so this converter is a single forward scan with ``str.find``: every
character is looked at a bounded number of times, whatever the page. A ``deadline``
(``time.monotonic()`` value) is checked as it goes, so the caller's timeout covers the
conversion too.
"""

from __future__ import annotations

import html
import re
import time

_SKIPPED = {"script", "style", "noscript", "template", "svg"}
_BLOCKS = {
    "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header",
    "footer", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "title", "main", "nav",
}  # fmt: skip
_TAG_NAME = re.compile(r"/?([A-Za-z][A-Za-z0-9:-]{0,30})")
_TAG_STOP = re.compile(r"[\"'>]")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_CHECK_EVERY = 2_000  # tags between two looks at the clock


class ConversionTimeout(Exception):
    """The page could not be converted before the deadline."""


def _tag_end(page: str, start: int) -> int:
    """Index just past the ``>`` closing the tag opened at ``start``; quoted attribute values
    may hold ``>``. -1 when the page ends first (then nothing after ``start`` is text)."""
    position = start
    while True:
        stop = _TAG_STOP.search(page, position)
        if stop is None:
            return -1
        if stop.group() == ">":
            return stop.end()
        end_quote = page.find(stop.group(), stop.end())
        if end_quote == -1:
            return -1
        position = end_quote + 1


def html_to_text(page: str, *, deadline: float | None = None) -> str:
    """The visible text of ``page``, whitespace collapsed, one block per line; linear time.
    Raises ConversionTimeout when ``deadline`` passes first."""
    lowered = page.lower()  # for finding </script> and friends; same indices as page
    parts: list[str] = []
    position, tags = 0, 0
    length = len(page)
    while position < length:
        opening = page.find("<", position)
        if opening == -1:
            parts.append(html.unescape(page[position:]))
            break
        if opening > position:
            parts.append(html.unescape(page[position:opening]))
        tags += 1
        if deadline is not None and tags % _CHECK_EVERY == 0 and time.monotonic() > deadline:
            raise ConversionTimeout
        if page.startswith("<!--", opening):
            end = page.find("-->", opening + 4)
            position = length if end == -1 else end + 3
            continue
        if page.startswith("<!", opening) or page.startswith("<?", opening):
            end = page.find(">", opening + 2)
            position = length if end == -1 else end + 1
            continue
        name_match = _TAG_NAME.match(page, opening + 1)
        if name_match is None:  # a lone "<" in text
            parts.append("<")
            position = opening + 1
            continue
        end = _tag_end(page, name_match.end())
        if end == -1:
            break
        name = name_match.group(1).lower()
        closing = page[opening + 1] == "/"
        position = end
        if name in _SKIPPED and not closing and page[end - 2 : end] != "/>":
            found = lowered.find(f"</{name}", position)
            if found == -1:
                break
            after = page.find(">", found)
            position = length if after == -1 else after + 1
            continue
        if name in _BLOCKS:
            parts.append("\n")
    text = "".join(parts)
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


__all__ = ["ConversionTimeout", "html_to_text"]
