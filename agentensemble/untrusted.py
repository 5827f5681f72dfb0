"""Structured input from outside the process, parsed one way: bounded in size, depth and time.

Model output, tool output, an MCP server's data, a webhook's answer and a remote HTTP body are
hostile input. Every place that turns such text into Python values calls this module, so a new
surface inherits the defences instead of re-implementing them::

    from agentensemble.untrusted import UntrustedInputError, aparse_json, parse_json

    value = parse_json(text, what="the webhook's answer")          # sync, small inputs
    value = await aparse_json(body, what="the response", timeout=5)  # async: off the event loop

- **Size**: text longer than ``max_chars`` (bytes: longer than ``max_chars`` bytes) is refused
  before any parsing.
- **Depth**: a value nested deeper than ``max_depth`` arrays/objects is refused; Python's
  ``RecursionError`` never escapes (it is a parse error like any other).
- **Time**: parsing is linear in the size (the C JSON scanner); ``aparse_json`` parses large
  inputs in a daemon thread, so the event loop never waits on them, and gives up after
  ``timeout`` seconds.
- **Errors**: every failure is one ``UntrustedInputError`` (a ``ValueError``) whose message says
  what was wrong and where, short enough to show a model in a correction turn. Giant integers
  (over Python's 4300 digits), invalid UTF-8 and, with ``unique_keys=True``, an object naming a
  key twice (``DuplicateKeyError``) are refused the same way.

PDF is read one way too: ``pdf_text`` bounds a file's size, pages, text and time.

YAML is read one way too: ``parse_yaml`` bounds the text's size, its values (aliases count once
per use, so an alias bomb, "billion laughs", is refused), its depth, and allows only plain
tags (no object construction); errors carry the line.

HTML is read one way too: ``html_text`` (the bounded single-scan converter of
``agentensemble._base.html``, linear on any page), never the standard library's ``html.parser``,
which is quadratic on unfinished constructs (a 60 kB page held a run 30-50 s). A test forbids
``html.parser`` and raw ``json.loads``/``yaml.load`` on outside data everywhere else
(``tests/test_untrusted_readers.py``).

The module imports only the standard library; importing it is cheap.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from typing import Any

from agentensemble.errors import UntrustedInputError

MAX_CHARS = 8_000_000
"""Default size bound, in characters (or bytes for ``bytes`` input)."""
MAX_DEPTH = 100
"""Default depth bound: arrays and objects nested inside each other."""
OFF_LOOP_CHARS = 256_000
"""``aparse_json`` parses input larger than this in a worker thread (smaller: a millisecond)."""
DEFAULT_TIMEOUT = 10.0
"""``aparse_json``'s default deadline, in seconds."""


class DuplicateKeyError(UntrustedInputError):
    """A JSON object names the same key twice (plain ``json.loads`` silently keeps the last).

    With ``{"to": "alice", "to": "mallory"}`` a reviewer reading the text and a tool reading the
    parsed value would see different calls; where that matters, parse with ``unique_keys=True``.
    """

    def __init__(self, key: str, what: str = "the input") -> None:
        super().__init__(what, f"not usable (duplicate key {key!r} in a JSON object)")
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKeyError(key)
        result[key] = value
    return result


_UNIQUE_KEYS = json.JSONDecoder(object_pairs_hook=_unique_pairs)
"""The decoder of ``parse_json(unique_keys=True)``; it holds no state between calls."""


def parse_json(
    text: str | bytes | bytearray,
    *,
    what: str = "the input",
    max_chars: int = MAX_CHARS,
    max_depth: int = MAX_DEPTH,
    unique_keys: bool = False,
) -> Any:
    """Parse untrusted JSON ``text``; raise ``UntrustedInputError`` for anything unusable.

    ``what`` names the input in error messages ("the model's answer", "the server's body").
    Runs on the calling thread: use ``aparse_json`` from async code for input that may be large.
    """
    if len(text) > max_chars:
        unit = "characters" if isinstance(text, str) else "bytes"
        raise UntrustedInputError(
            what, f"too large ({len(text)} {unit}; at most {max_chars} are accepted)"
        )
    if not isinstance(text, str):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UntrustedInputError(what, f"not valid UTF-8 (at byte {exc.start})") from exc
    try:
        if not unique_keys:
            value = json.loads(text)
        elif text.startswith("\ufeff"):  # json.loads names the BOM in its error
            value = json.loads(text, object_pairs_hook=_unique_pairs)
        else:  # a kept decoder: json.loads makes a new one per call for a hook (~5 us)
            value = _UNIQUE_KEYS.decode(text)
    except DuplicateKeyError as exc:
        raise DuplicateKeyError(exc.key, what) from None
    except json.JSONDecodeError as exc:
        raise UntrustedInputError(
            what, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from exc
    except RecursionError as exc:
        raise UntrustedInputError(what, _too_deep(max_depth)) from exc
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion"
        reason = str(exc).split(":")[0]
        raise UntrustedInputError(what, f"not usable JSON ({reason})") from exc
    if depth_exceeds(value, max_depth):
        raise UntrustedInputError(what, _too_deep(max_depth))
    return value


async def aparse_json(
    text: str | bytes | bytearray,
    *,
    what: str = "the input",
    max_chars: int = MAX_CHARS,
    max_depth: int = MAX_DEPTH,
    unique_keys: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> Any:
    """``parse_json`` for async code: large input is parsed in a daemon thread (the event loop
    keeps serving other runs) and the parse is abandoned after ``timeout`` seconds."""
    if len(text) <= OFF_LOOP_CHARS or len(text) > max_chars:  # instant either way
        return parse_json(
            text, what=what, max_chars=max_chars, max_depth=max_depth, unique_keys=unique_keys
        )
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(outcome: tuple[bool, Any]) -> None:
        if not future.done():
            if outcome[0]:
                future.set_result(outcome[1])
            else:
                future.set_exception(outcome[1])

    def target() -> None:
        try:
            outcome: tuple[bool, Any] = (
                True,
                parse_json(
                    text,
                    what=what,
                    max_chars=max_chars,
                    max_depth=max_depth,
                    unique_keys=unique_keys,
                ),
            )
        except BaseException as exc:  # delivered to the awaiting coroutine
            outcome = (False, exc)
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=target, name="agentensemble-parse", daemon=True).start()
    try:
        return await asyncio.wait_for(future, timeout)
    except asyncio.TimeoutError:
        raise UntrustedInputError(what, f"too slow to parse (over {timeout:g} s)") from None


def html_text(
    page: str, *, what: str = "the page", max_chars: int = MAX_CHARS, deadline: float | None = None
) -> str:
    """The visible text of untrusted HTML ``page``: tags dropped, scripts and styles skipped,
    one block per line, whitespace collapsed; linear in the size. Raises
    ``UntrustedInputError`` for a page over ``max_chars`` or one not converted before
    ``deadline`` (a ``time.monotonic()`` value)."""
    from agentensemble._base.html import ConversionTimeout, html_to_text

    if len(page) > max_chars:
        raise UntrustedInputError(
            what, f"too large ({len(page)} characters; at most {max_chars} are accepted)"
        )
    try:
        return html_to_text(page, deadline=deadline)
    except ConversionTimeout:
        raise UntrustedInputError(what, "too slow to convert to text") from None


MAX_PDF_PAGES = 2_000
"""Default bound on a PDF's pages: past it, the file is refused before any page is read."""
PDF_SECONDS = 60.0
"""Default time for reading one PDF's text: checked before each page."""


def pdf_text(
    data: bytes,
    *,
    what: str = "the PDF",
    max_bytes: int = MAX_CHARS,
    max_pages: int = MAX_PDF_PAGES,
    max_chars: int = MAX_CHARS,
    deadline: float | None = None,
) -> str:
    """The text of an untrusted PDF, a paragraph per page. Bounded before and while it is read:
    the file's size, its page count (read from the document before any page), the text's
    length, and the time (``deadline``, a ``time.monotonic()`` value, default ``PDF_SECONDS``
    from now, checked before each page). pypdf bounds each stream's decompressed size itself.
    Any failure, a broken file included, is one ``UntrustedInputError`` naming ``what``."""
    import io
    import time

    try:
        from pypdf import PdfReader
    except ImportError as error:
        raise UntrustedInputError(
            what, "not readable: PDF files need pypdf: pip install 'agentensemble-py[pdf]'"
        ) from error
    if len(data) > max_bytes:
        raise UntrustedInputError(
            what, f"too large ({len(data)} bytes; at most {max_bytes} are accepted)"
        )
    ends = time.monotonic() + PDF_SECONDS if deadline is None else deadline
    parts: list[str] = []
    size = 0
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        pages = len(reader.pages)
        if pages > max_pages:
            raise UntrustedInputError(
                what, f"too long ({pages} pages; at most {max_pages} are read)"
            )
        for number in range(pages):
            if time.monotonic() > ends:
                raise UntrustedInputError(what, f"too slow to read (stopped at page {number + 1})")
            text = (reader.pages[number].extract_text() or "").strip()
            size += len(text)
            if size > max_chars:
                raise UntrustedInputError(
                    what, f"too much text (over {max_chars} characters by page {number + 1})"
                )
            parts.append(text)
    except UntrustedInputError:
        raise
    except (Exception, RecursionError) as error:  # pypdf raises many kinds on a broken file
        raise UntrustedInputError(
            what, f"not a readable PDF ({type(error).__name__}: {str(error)[:200]})"
        ) from None
    return "\n\n".join(parts)


MAX_YAML_NODES = 10_000
"""``parse_yaml``'s default bound on values built (an alias counts each time it is used)."""

YamlPath = tuple[str | int, ...]
"""Where a value sits in a YAML document: keys and list indexes from the top."""


class YamlInputError(UntrustedInputError):
    """Untrusted YAML is unusable; ``line`` (1-based) says where, when it is known."""

    def __init__(self, what: str, reason: str, line: int | None = None) -> None:
        super().__init__(what, reason if line is None else f"{reason} (line {line})")
        self.line = line
        self.problem = reason


_PLAIN_YAML_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")


def parse_yaml(
    text: str,
    *,
    what: str = "the input",
    max_chars: int = MAX_CHARS,
    max_nodes: int = MAX_YAML_NODES,
    max_depth: int = MAX_DEPTH,
    lines: dict[YamlPath, int] | None = None,
) -> Any:
    """Parse untrusted YAML ``text`` into plain dicts, lists and scalars, or raise
    ``YamlInputError``. Bounded before and while it is read: the size (``max_chars``), the
    values built (``max_nodes``; an alias counts each time it is used), the depth
    (``max_depth``); duplicate keys and non-plain tags (``!!python/object``) are refused.
    ``lines``, when given, is filled with the 1-based line of every key path."""
    import yaml  # PyYAML: imported only when YAML is read

    if len(text) > max_chars:
        raise YamlInputError(
            what, f"too large ({len(text)} characters; at most {max_chars} are accepted)"
        )
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise YamlInputError(
            what, f"not valid YAML ({problem})", None if mark is None else mark.line + 1
        ) from None
    except RecursionError:  # the composer recurses per level, before any value is counted
        raise YamlInputError(what, _too_deep(max_depth)) from None
    if node is None:
        return None
    constructor = yaml.SafeLoader("")
    found = {} if lines is None else lines
    count = 0
    # iterative: (node, path, parent container, key in it); the root goes in a one-slot list
    top: list[Any] = [None]
    stack: list[tuple[Any, YamlPath, Any, Any]] = [(node, (), top, 0)]
    while stack:
        item, path, parent, slot = stack.pop()
        line = item.start_mark.line + 1
        found.setdefault(path, line)
        count += 1
        if count > max_nodes:  # an alias's mark is its anchor's: name the key that uses it
            keyed = next(
                (path[: i + 1] for i in reversed(range(len(path))) if isinstance(path[i], str)), ()
            )
            raise YamlInputError(
                what, f"too large (over {max_nodes} values)", found.get(keyed, line)
            )
        if len(path) > max_depth:
            raise YamlInputError(what, _too_deep(max_depth), line)
        if isinstance(item, yaml.MappingNode) and item.tag in _PLAIN_YAML_TAGS:
            mapping: dict[str, Any] = {}
            for key_node, value_node in item.value:
                key = _yaml_scalar(key_node, constructor, yaml, what)
                if not isinstance(key, str | int) or isinstance(key, bool):
                    raise YamlInputError(
                        what, "not usable (a key must be text)", key_node.start_mark.line + 1
                    )
                key = str(key)
                if key in mapping:
                    raise YamlInputError(
                        what,
                        f"not usable (the key {key!r} appears twice)",
                        key_node.start_mark.line + 1,
                    )
                mapping[key] = None
                child = (*path, key)
                found[child] = key_node.start_mark.line + 1
                stack.append((value_node, child, mapping, key))
            parent[slot] = mapping
        elif isinstance(item, yaml.SequenceNode) and item.tag in _PLAIN_YAML_TAGS:
            sequence: list[Any] = [None] * len(item.value)
            stack.extend(
                (child, (*path, index), sequence, index) for index, child in enumerate(item.value)
            )
            parent[slot] = sequence
        else:
            parent[slot] = _yaml_scalar(item, constructor, yaml, what)
    return top[0]


def yaml_scalar_value(node: Any, constructor: Any) -> Any:
    """The value of a YAML scalar node; ``ValueError`` for a number no one could show (a
    5,000-digit integer, or ``0x`` and 5,000 hex digits, which YAML reads but ``str`` refuses)
    as for one too long to read. Both YAML readers (this one, the crew loader's) build with it."""
    value = constructor.construct_object(node, deep=True)
    if isinstance(value, int):
        str(value)  # raises ValueError past Python's digit limit
    return value


def _yaml_scalar(node: Any, constructor: Any, yaml: Any, what: str) -> Any:
    line = node.start_mark.line + 1
    if not isinstance(node, yaml.ScalarNode):
        if node.tag in _PLAIN_YAML_TAGS:
            raise YamlInputError(what, "not usable (a key must be text)", line)
        raise YamlInputError(what, f"not usable (the tag {node.tag!r} is not allowed)", line)
    try:
        return yaml_scalar_value(node, constructor)
    except yaml.YAMLError as error:  # an unknown tag: !!python/object, !custom
        problem = getattr(error, "problem", None) or "cannot read this value"
        raise YamlInputError(what, f"not usable ({problem})", line) from None
    except (ValueError, OverflowError):  # a 5,000-digit integer (or hex), a float out of range
        raise YamlInputError(what, "not usable (a number too long to read)", line) from None


def depth_exceeds(value: Any, max_depth: int) -> bool:
    """Whether ``value`` nests lists/dicts deeper than ``max_depth`` (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _too_deep(max_depth: int) -> str:
    return f"nested too deeply (more than {max_depth} levels of arrays/objects)"


__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_CHARS",
    "MAX_DEPTH",
    "MAX_PDF_PAGES",
    "MAX_YAML_NODES",
    "OFF_LOOP_CHARS",
    "PDF_SECONDS",
    "DuplicateKeyError",
    "UntrustedInputError",
    "YamlInputError",
    "YamlPath",
    "aparse_json",
    "depth_exceeds",
    "html_text",
    "parse_json",
    "parse_yaml",
    "pdf_text",
    "yaml_scalar_value",
]
