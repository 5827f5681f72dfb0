"""Relative paths written in a crew file (or a dataset file) are the file's folder's.

The same crew reads and writes the same files, and starts the same programs, from whatever
directory it is run: ``FileRead: {root: data}`` is the ``data`` folder beside the crew file, not
one in the working directory. Which arguments of a class built from the file are paths is read
from its constructor's annotations (``pathlib.Path``, ``os.PathLike``, so the built-in tools'
``root`` and ``cwd``, an MCP server's ``cwd``, and the same in your own tool classes), plus the
one path that is typed as text, an MCP stdio server's ``command`` when it is written as a path
(``./server.sh``; a bare program name such as ``npx`` is looked up on ``PATH`` as usual). An MCP
stdio server started from a crew file runs in the file's folder unless ``cwd:`` says otherwise,
so its relative ``args`` (``[geo_server.py]``) are the folder's files too.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Mapping
from typing import Any

_PATH_TYPE = re.compile(r"\b(?:PathLike|PurePath|Path)\b")
_STDIO_SERVER = ("agentensemble.mcp.server", "MCPServerStdio")


def in_folder(value: Any, folder: str) -> Any:
    """``value`` joined to ``folder`` if it is a relative path (``~`` is the home folder); any
    other value (an absolute path, a non-path) unchanged."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        return value
    expanded = os.path.expanduser(value)
    return expanded if os.path.isabs(expanded) else os.path.join(folder, expanded)


def path_parameters(cls: type) -> tuple[str, ...]:
    """The names of ``cls``'s constructor parameters annotated as paths (or lists of them)."""
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):  # a builtin or C class: nothing to read
        return ()
    return tuple(
        parameter.name
        for parameter in parameters
        if parameter.annotation is not inspect.Parameter.empty
        and _PATH_TYPE.search(_annotation_text(parameter.annotation))
    )


def _annotation_text(annotation: Any) -> str:
    if isinstance(annotation, str):  # `from __future__ import annotations`
        return annotation
    return getattr(annotation, "__name__", None) or repr(annotation)


def _is_stdio_server(cls: type) -> bool:
    """A subclass of ``agentensemble.mcp.MCPServerStdio``, known without importing ``mcp``."""
    return any((base.__module__, base.__qualname__) == _STDIO_SERVER for base in cls.__mro__)


def in_crew_folder(cls: type, arguments: Mapping[str, Any], folder: str) -> dict[str, Any]:
    """``arguments`` for ``cls`` with its relative paths resolved against ``folder``."""
    resolved = dict(arguments)
    for name in path_parameters(cls):
        value = resolved.get(name)
        if isinstance(value, list):
            resolved[name] = [in_folder(item, folder) for item in value]
        elif value is not None:
            resolved[name] = in_folder(value, folder)
    if _is_stdio_server(cls) and "cwd" in path_parameters(cls):
        command = resolved.get("command")
        if isinstance(command, str) and ("/" in command or os.sep in command):
            resolved["command"] = in_folder(command, folder)
        if resolved.get("cwd") is None:
            resolved["cwd"] = folder
    return resolved


__all__ = ["in_crew_folder", "in_folder", "path_parameters"]
