"""Names in a crew file that stand for Python objects: ``package.module:name`` import paths and
built-in tool names (``calculator`` or ``Calculator``, from ``agentensemble.tools.builtin``)."""

from __future__ import annotations

import importlib
import re
from typing import Any

_IMPORT_PATH = re.compile(
    r"^[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*$"
)
BUILTIN_MODULE = "agentensemble.tools.builtin"


class BadReference(ValueError):
    """A name that does not lead to an object; the message says what was tried."""


def is_import_path(text: str) -> bool:
    return bool(_IMPORT_PATH.match(text))


def import_object(path: str) -> Any:
    """The object at ``package.module:attribute`` (the attribute may be dotted)."""
    if not is_import_path(path):
        raise BadReference(
            f"{path!r} is not an import path: write package.module:name (e.g. mytools:search)"
        )
    module_name, attribute = path.split(":", 1)
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise BadReference(f"cannot import module {module_name!r}: {error}") from error
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise BadReference(f"module {module_name!r} has no attribute {attribute!r}") from None
    return target


def _normalised(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name).lower()


def builtin_tools() -> dict[str, Any]:
    """The built-in tool classes by normalised name; empty when this install has none."""
    try:
        module = importlib.import_module(BUILTIN_MODULE)
    except ImportError:
        return {}
    names = getattr(module, "__all__", [])
    return {_normalised(name): getattr(module, name) for name in names}


def builtin_tool(name: str) -> Any:
    """The built-in tool class called ``name`` (``calculator``, ``Calculator``, ``file_read``)."""
    table = builtin_tools()
    found = table.get(_normalised(name))
    if found is None:
        known = ", ".join(sorted(getattr(cls, "__name__", key) for key, cls in table.items()))
        hint = f"built-in tools: {known}" if known else "this install has no built-in tools"
        raise BadReference(
            f"unknown tool {name!r}: name a built-in tool or give an import path "
            f"package.module:name ({hint})"
        )
    return found


def make_tool(reference: str, arguments: dict[str, Any] | None) -> Any:
    """A tool from a reference: classes are instantiated (with ``arguments``), other objects
    (``@tool`` functions, tool instances, objects with ``@tool`` methods) are used as they are."""
    target = import_object(reference) if ":" in reference else builtin_tool(reference)
    return build_tool(reference, target, arguments)


def build_tool(reference: str, target: Any, arguments: dict[str, Any] | None) -> Any:
    """``make_tool`` once the reference is imported: a class built with ``arguments``."""
    if isinstance(target, type):
        try:
            return target(**(arguments or {}))
        except (TypeError, ValueError, OSError) as error:  # a missing file, a bad value
            raise BadReference(f"cannot build {target.__name__}: {error}") from error
    if arguments:
        raise BadReference(
            f"{reference!r} is not a class, so it takes no arguments (got {sorted(arguments)})"
        )
    return target


__all__ = [
    "BUILTIN_MODULE",
    "BadReference",
    "build_tool",
    "builtin_tool",
    "builtin_tools",
    "import_object",
    "is_import_path",
    "make_tool",
]
