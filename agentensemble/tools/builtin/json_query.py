"""JsonQuery: pick a value out of JSON text by a path such as ``items[0].name``.

Path syntax: keys separated by dots (``a.b``), list indices in brackets (``[0]``, ``[-1]``),
quoted keys for odd names (``["key with.dots"]``), ``[*]`` for every element, and an optional
leading ``$``. The document and the answer are bounded in size.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from pydantic import BaseModel, Field

from agentensemble.tools.builtin._base import BuiltinTool, refuse
from agentensemble.untrusted import UntrustedInputError, parse_json

MAX_DOCUMENT_CHARS = 2_000_000
MAX_PATH_CHARS = 1_000
DEFAULT_MAX_OUTPUT_CHARS = 20_000
_WILDCARD = object()
_TOKEN = re.compile(
    r"""\.?(?P<key>[A-Za-z_][A-Za-z0-9_\-]*)"""
    r"""|\[(?P<index>-?\d+)\]"""
    r"""|\[(?P<star>\*)\]"""
    r"""|\[(?P<quoted>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')\]"""
)


class JsonQueryInput(BaseModel):
    document: Annotated[str, Field(description="The JSON text to query")]
    path: Annotated[
        str,
        Field(description="Where to look, e.g. 'items[0].name', 'users[*].email' or '$' (all)"),
    ]


def parse_path(path: str) -> list[Any]:
    """The steps of ``path``: str keys, int indices and a wildcard marker."""
    text = path.strip()
    if len(text) > MAX_PATH_CHARS:
        refuse(f"path is {len(text)} characters long; at most {MAX_PATH_CHARS}")
    text = text[1:] if text.startswith("$") else text
    steps: list[Any] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            refuse(f"cannot read path {path!r} at position {position + 1}: {text[position:]!r}")
        if match.group("key") is not None:
            steps.append(match.group("key"))
        elif match.group("index") is not None:
            steps.append(int(match.group("index")))
        elif match.group("star") is not None:
            steps.append(_WILDCARD)
        else:
            quoted = match.group("quoted")
            try:
                steps.append(json.loads('"' + quoted[1:-1].replace('"', '\\"') + '"'))
            except ValueError:
                refuse(f"cannot read the quoted key {quoted} in path {path!r}")
        position = match.end()
    return steps


def query(document: Any, steps: list[Any]) -> Any:
    """Follow ``steps`` through ``document``; a wrong step says where and what was there."""
    current: Any = document
    for depth, step in enumerate(steps):
        if step is _WILDCARD:
            if not isinstance(current, list):
                refuse(f"step {depth + 1} ([*]) expects a list, found {_kind(current)}")
            return [query(item, steps[depth + 1 :]) for item in current]
        if isinstance(step, int):
            if not isinstance(current, list):
                refuse(f"step {depth + 1} ([{step}]) expects a list, found {_kind(current)}")
            if not -len(current) <= step < len(current):
                refuse(f"index {step} is out of range for a list of {len(current)} item(s)")
            current = current[step]
            continue
        if not isinstance(current, dict):
            refuse(f"step {depth + 1} ({step!r}) expects an object, found {_kind(current)}")
        if step not in current:
            keys = ", ".join(repr(key) for key in list(current)[:20])
            refuse(f"no key {step!r} at step {depth + 1}; keys there: {keys or 'none'}")
        current = current[step]
    return current


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", type(None): "null"}.get(
        type(value), type(value).__name__
    )


class JsonQuery(BuiltinTool[JsonQueryInput]):
    """Pick a value out of a JSON document by a path such as ``items[0].name``."""

    default_name = "json_query"

    def __init__(
        self, *, name: str | None = None, max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    ) -> None:
        self._init_name(name)
        self.max_output_chars = max_output_chars
        self.description = (
            "Pick a value out of a JSON document by a path: keys with dots (a.b), indices "
            "([0], [-1]), quoted keys ([\"odd key\"]), [*] for every element, '$' for all."
        )

    def do_execute(self, input: JsonQueryInput) -> str:
        if len(input.document) > MAX_DOCUMENT_CHARS:
            refuse(f"document is {len(input.document)} characters; at most {MAX_DOCUMENT_CHARS}")
        try:
            document = parse_json(input.document, what="document", max_chars=MAX_DOCUMENT_CHARS)
        except UntrustedInputError as error:
            refuse(str(error))
        value = query(document, parse_path(input.path))
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if len(text) > self.max_output_chars:
            refuse(
                f"the answer is {len(text)} characters; at most {self.max_output_chars}. "
                "Ask for a narrower path"
            )
        return text


__all__ = ["JsonQuery", "JsonQueryInput", "parse_path", "query"]
