"""What a tool's unexpected exception becomes: text for the model, a warning for the developer.

The model sees the exception's type with its message (``Error: KeyError: 'O-9'``), so a bare
``'O-9'`` is not mistaken for an answer. The developer sees a ``ToolExceptionWarning`` (a Python
warning, shown on stderr by default, once per raising line) that points at the line of the tool
that raised, whatever the logging setup; the full traceback is in the WARNING log line. A
``ToolExecutionError`` / ``ToolArgumentsError`` is a tool's designed answer: its message alone
reaches the model, and no warning is given.
"""

from __future__ import annotations

import functools
import sysconfig
import traceback
import warnings
from pathlib import Path

from agentensemble.errors import ToolArgumentsError, ToolExecutionError
from agentensemble.hints import ToolExceptionWarning


@functools.cache
def _not_the_tool() -> tuple[str, ...]:
    """Where frames that are not the tool's come from: this package, the standard library and
    installed packages. Resolved on the first warning, not at import (``sysconfig`` and the path
    resolution cost a few milliseconds)."""
    libraries = (
        str(Path(path).resolve())
        for path in {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib")}
    )
    return (str(Path(__file__).resolve().parents[1]), *libraries)


def is_designed(exc: BaseException) -> bool:
    """A failure the tool meant to report (its message is its answer to the model), or one of
    ours whose message already names the exception it wraps (``names_its_cause``)."""
    return isinstance(exc, (ToolExecutionError, ToolArgumentsError)) or bool(
        getattr(exc, "names_its_cause", False)
    )


def model_text(exc: Exception) -> str:
    """``KeyError: 'O-9'`` for an unexpected exception; the message alone for a designed one."""
    message = str(exc)
    if is_designed(exc):
        return message or type(exc).__name__
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def warn_tool_exception(tool: str, exc: BaseException) -> None:
    """One ``ToolExceptionWarning`` located at the tool's own line that raised."""
    if getattr(exc, "names_its_cause", False) and exc.__cause__ is not None:
        exc = exc.__cause__  # a pipeline's adapter: the user's code raised the cause
    if is_designed(exc) or not isinstance(exc, Exception):
        return
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if not f.filename.startswith(_not_the_tool())]
    where = ours[-1] if ours else (frames[-1] if frames else None)
    text = model_text(exc)
    message = (
        f"the call to tool {tool!r} raised {text}; the model was told 'Error: {text}' and the "
        "run went on (the traceback is in the WARNING log)"
    )
    if where is None:
        warnings.warn(message, ToolExceptionWarning, stacklevel=2)
        return
    warnings.warn_explicit(
        message,
        ToolExceptionWarning,
        filename=where.filename,
        lineno=where.lineno or 0,
        module=Path(where.filename).stem,
        registry=_registry(where.filename),
    )


_Registry = dict[str | tuple[str, type[Warning], int], int]
_REGISTRIES: dict[str, _Registry] = {}


def _registry(filename: str) -> _Registry:
    """The "once per location" memory ``warnings`` keeps for a file we did not import."""
    return _REGISTRIES.setdefault(filename, {})


__all__ = ["is_designed", "model_text", "warn_tool_exception"]
