"""The tool interface every tool satisfies, and the result every call ends with."""

from __future__ import annotations

import inspect
import json
from abc import ABC
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from agentensemble._base.dataclass import dataclass
from agentensemble.attachments import Attachment, attachment_list, distinct
from agentensemble.outputs import ReturnBehavior
from agentensemble.tools._sync import in_worker_thread


@dataclass(frozen=True)
class ToolResult:
    """How one tool call ended.

    ``output`` is the text the model sees on success; ``error_message`` is what it sees (as
    ``Error: <message>``) on failure. ``structured_output`` travels to records and listeners only,
    never to the model. ``attachments`` (``Image``, ``Document``, ``Audio``) go to the model after
    the text, which names each as ``[attachment: NAME]``.
    """

    output: str = ""
    is_success: bool = True
    error_message: str | None = None
    structured_output: Any = None
    attachments: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        """Refuse a result the run could not use, naming the mistake (the call then fails)."""
        if not isinstance(self.output, str):
            raise TypeError(
                f"ToolResult output must be a str, got {type(self.output).__name__} "
                f"{_short_repr(self.output)}: return the value itself from the tool (it is sent "
                "as JSON), or ToolResult.success(text, structured_output=value)"
            )
        if not isinstance(self.is_success, bool):
            raise TypeError(
                f"ToolResult is_success must be a bool, got {type(self.is_success).__name__}"
            )
        if self.error_message is not None and not isinstance(self.error_message, str):
            raise TypeError(
                f"ToolResult error_message must be a str, got "
                f"{type(self.error_message).__name__} {_short_repr(self.error_message)}"
            )
        if self.attachments:
            attachment_list(self.attachments, "ToolResult attachments")

    @classmethod
    def success(cls, output: str | None = None, structured_output: Any = None) -> ToolResult:
        """A successful call; ``None`` output becomes the empty string."""
        return cls(output="" if output is None else output, structured_output=structured_output)

    @classmethod
    def failure(cls, error_message: str) -> ToolResult:
        """A failed call; the message goes back to the model so it can adapt."""
        if not isinstance(error_message, str):
            raise TypeError(
                f"ToolResult.failure(error_message) takes the str the model reads, got "
                f"{type(error_message).__name__} {_short_repr(error_message)}"
            )
        return cls(output="", is_success=False, error_message=error_message)


class AgentTool(ABC):
    """The framework's tool interface: a name, a description and ``execute(input) -> ToolResult``.

    Set ``name`` and ``description`` as class attributes or in ``__init__``. Implement either
    ``execute`` (sync; it runs in a worker thread so it never blocks other work) or
    ``async def aexecute`` — the other one is derived. The name is checked against
    ``^[A-Za-z0-9_]+$`` (at most 64 characters) when the tool is resolved. The model sees one
    required string parameter, ``input``, unless ``parameters_schema`` says otherwise.
    """

    name: str
    description: str
    return_behavior: ReturnBehavior = ReturnBehavior.TO_LLM
    timeout: float | None = None
    """Seconds one run of the body may take (None: not set; the agent's or ensemble's
    ``tool_policy``, else no limit): past them the call fails with "timed out after N s",
    which the model sees; a sync body is abandoned in its thread. A class whose ``timeout``
    means something of its own sets ``own_deadline = True`` (docs/tools.md)."""
    retries: int | None = None
    """Runs of the body again, with backoff, after it raised an unexpected exception or timed
    out (never for a tool that declares approval). None: not set (the agent's or ensemble's
    ``tool_policy``, else 0); 0 says "never", whatever a default says."""
    max_concurrency: int | None = None
    """Bodies of this tool running at once across a run (None: no bound)."""

    def execute(self, input: str) -> ToolResult:
        """Run the tool. The default runs ``aexecute`` to completion (for async-only tools)."""
        if type(self).aexecute is AgentTool.aexecute:
            raise NotImplementedError(
                f"{type(self).__name__} must implement execute(input) or async aexecute(input)"
            )
        from agentensemble.tools._sync import run_coroutine_sync
        from agentensemble.tools.context import current_tool_context

        return run_coroutine_sync(self.aexecute(input), current_tool_context().loop)

    async def aexecute(self, input: str) -> ToolResult:
        """Run the tool from async code. The default runs ``execute`` in a worker thread."""
        return await in_worker_thread(self.execute, input)

    def parameters_schema(self) -> dict[str, Any] | None:
        """The JSON schema of the arguments, or None for the single string parameter ``input``.

        A tool that returns a schema receives the model's JSON arguments text verbatim as its
        ``input`` (typed-input tools and decorated functions do this).
        """
        return None

    def __repr__(self) -> str:
        name = getattr(self, "name", None)
        return f"{type(self).__name__}(name={name!r})"


def render_value(value: Any) -> str:
    """Text for a tool's return value: str as is, pydantic models and anything else as JSON
    (unknown objects as their ``str``). TypeError naming the type when even that fails."""
    if isinstance(value, str):
        return value
    try:
        if isinstance(value, BaseModel):
            return value.model_dump_json()
        try:
            return json.dumps(value, ensure_ascii=False, default=_jsonable)
        except (TypeError, ValueError):
            return json.dumps(to_jsonable_python(value, fallback=str), ensure_ascii=False)
    except Exception as exc:
        raise TypeError(
            f"the tool returned a {type(value).__name__} that cannot be sent as text or JSON "
            f"({type(exc).__name__}: {exc}); return a str"
        ) from exc


def _short_repr(value: Any, limit: int = 60) -> str:
    try:
        text = repr(value)
    except Exception:
        return "(unprintable)"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _jsonable(value: Any) -> Any:
    return to_jsonable_python(value, fallback=str)


def as_tool_result(value: Any, *, none_output: str = "") -> ToolResult:
    """Normalise what a tool body returned: a ToolResult as is, None → ``none_output``, str as
    is, an attachment or a list mixing str and attachments as text naming each attachment (see
    ``attachment_result``), anything else rendered as JSON (the original kept as
    ``structured_output``).
    """
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult.success(none_output)
    if isinstance(value, str):
        return ToolResult.success(value)
    with_attachments = attachment_result(value)
    if with_attachments is not None:
        return with_attachments
    return ToolResult.success(render_value(value), structured_output=value)


def attachment_result(value: Any) -> ToolResult | None:
    """A tool's ``Image`` / ``Document`` / ``Audio``, or a list mixing str and them, as a result:
    the texts and ``[attachment: NAME]`` for each attachment, one a line, the attachments beside
    (two of one name are told apart: ``image``, ``image 2``). None for any other value."""
    items = [value] if isinstance(value, Attachment) else value
    if not isinstance(items, (list, tuple)) or not any(isinstance(i, Attachment) for i in items):
        return None
    if not all(isinstance(item, (str, Attachment)) for item in items):
        return None
    named = tuple(distinct(i for i in items if isinstance(i, Attachment)))
    shown = iter(named)
    lines = [item if isinstance(item, str) else str(next(shown)) for item in items]
    return ToolResult(output="\n".join(lines), attachments=named)


def implements_body(tool: AgentTool) -> bool:
    """Whether a tool class implements ``execute`` or ``aexecute`` itself (not just inherits)."""
    cls = type(tool)
    return cls.execute is not AgentTool.execute or cls.aexecute is not AgentTool.aexecute


def tool_description(tool: object) -> str:
    """A tool's description: its ``description`` attribute, else its class docstring, else ""."""
    description = getattr(tool, "description", None)
    if isinstance(description, str):
        return description
    doc = type(tool).__dict__.get("__doc__")
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


__all__ = ["AgentTool", "ReturnBehavior", "ToolResult"]
