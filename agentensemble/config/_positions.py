"""YAML text to plain data, remembering where every key and value stands in the file.

PyYAML composes a node tree that keeps marks (line, column); we build plain dicts, lists and
scalars from it, record each path's line, and refuse duplicate keys (PyYAML would keep the last
one silently). Only safe tags: no object construction from the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agentensemble.errors import ConfigurationError
from agentensemble.untrusted import yaml_scalar_value

Path = tuple[str | int, ...]


class ConfigFileError(ConfigurationError):
    """A crew file is wrong: the message starts with ``file:line: key.path:``."""

    def __init__(self, message: str, *, file: str, line: int | None, key: str) -> None:
        where = f"{file}:{line}" if line is not None else file
        prefix = f"{where}: {key}: " if key else f"{where}: "
        super().__init__(prefix + message)
        self.file = file
        self.line = line
        self.key = key


def dotted(path: Path) -> str:
    """``tasks.write.context[0]``: a path as a reader finds it in the file."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


@dataclass
class Located:
    """Plain data plus the 1-based line of every path in it."""

    data: Any
    source: str
    lines: dict[Path, int] = field(default_factory=dict)
    nodes: int = 0  # built so far: aliases may repeat a subtree, so this is bounded

    def line(self, path: Path) -> int | None:
        """The line of ``path``, or of its nearest ancestor the file mentions."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get(())

    def error(self, path: Path, message: str) -> ConfigFileError:
        return ConfigFileError(message, file=self.source, line=self.line(path), key=dotted(path))


_VARIABLE = re.compile(r"\{[A-Za-z_]\w*\}")


def _variable_hint(text: str, error: Any) -> str:
    """The usual cause when the broken lines hold a ``{variable}``: YAML reads ``{`` as the start
    of a mapping inside ``{...}`` or at the start of a value, so such text must be quoted."""
    lines = text.splitlines()
    marks = [getattr(error, name, None) for name in ("context_mark", "problem_mark")]
    numbers = {mark.line for mark in marks if mark is not None}
    if not any(_VARIABLE.search(lines[n]) for n in numbers if 0 <= n < len(lines)):
        return ""
    return (
        "; a value holding a {variable} must be quoted inside {...} or when it starts with "
        'the variable: description: "Write about {topic}"'
    )


def load_located(text: str, source: str) -> Located:
    """Parse YAML ``text`` (named ``source`` in errors) into Located data."""
    import yaml  # PyYAML; imported only when a crew file is read

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(error, "problem", None) or str(error)
        raise ConfigFileError(
            f"not valid YAML: {problem}{_variable_hint(text, error)}",
            file=source,
            line=line,
            key="",
        ) from error
    except RecursionError:  # PyYAML's composer recurses per level, before _build counts them
        raise ConfigFileError(
            f"the file is too deep (over {MAX_DEPTH} levels)", file=source, line=None, key=""
        ) from None
    located = Located(data=None, source=source)
    if node is None:
        located.data = {}
        return located
    constructor = yaml.SafeLoader("")
    located.data = _build(node, (), located, constructor, yaml)
    return located


_PLAIN_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:omap")


MAX_NODES = 100_000  # far beyond any crew; stops alias bombs ("billion laughs")
MAX_DEPTH = 64


def _build(node: Any, path: Path, located: Located, constructor: Any, yaml: Any) -> Any:
    located.lines.setdefault(path, node.start_mark.line + 1)
    located.nodes += 1
    if located.nodes > MAX_NODES or len(path) > MAX_DEPTH:
        raise located.error(
            path,
            f"the file is too large or too deep (over {MAX_NODES} values or {MAX_DEPTH} levels)",
        )
    if not isinstance(node, yaml.ScalarNode) and node.tag not in _PLAIN_TAGS:
        raise located.error(path, f"the tag {node.tag!r} is not allowed in a crew file")
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _scalar(key_node, path, located, constructor, yaml)
            if not isinstance(key, str | int):
                raise located.error(path, f"a key must be text, got {type(key).__name__}")
            key = str(key)
            child = (*path, key)
            if key in result:
                located.lines[child] = key_node.start_mark.line + 1
                raise located.error(child, "this key appears twice in the same mapping")
            located.lines[child] = key_node.start_mark.line + 1
            result[key] = _build(value_node, child, located, constructor, yaml)
        return result
    if isinstance(node, yaml.SequenceNode):
        items = []
        for index, item in enumerate(node.value):
            items.append(_build(item, (*path, index), located, constructor, yaml))
        return items
    return _scalar(node, path, located, constructor, yaml)


def _scalar(node: Any, path: Path, located: Located, constructor: Any, yaml: Any) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        raise located.error(path, "a key must be text, not a mapping or a list")
    try:
        return yaml_scalar_value(node, constructor)
    except yaml.YAMLError as error:
        raise located.error(path, f"cannot read this value: {error}") from error
    except (ValueError, OverflowError):  # a 5,000-digit integer (or hex), a float out of range
        shown = str(node.value)
        shown = shown if len(shown) <= 40 else f"{shown[:20]}…({len(shown)} characters)"
        raise located.error(
            path, f"cannot read the value {shown!r}: a number this long is not allowed"
        ) from None


__all__ = ["ConfigFileError", "Located", "Path", "dotted", "load_located"]
