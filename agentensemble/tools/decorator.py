"""``@tool``: turn a typed function or method into a tool, with its JSON schema from the signature.

The decorator returns the function itself, unchanged and still callable as usual; it only
attaches a ``ToolDefinition``. The resolver finds that definition on the function, on a bound
method, or on the methods of an object passed as a tool, and runs it as a ``FunctionTool``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import field
from typing import Any, TypeVar, overload

from pydantic import BaseModel

from agentensemble._base.dataclass import dataclass
from agentensemble._base.naming import tool_name_problem
from agentensemble.errors import ToolNameError
from agentensemble.outputs import ReturnBehavior
from agentensemble.tools import _gate
from agentensemble.tools._calls import check_policy
from agentensemble.tools._sync import in_worker_thread, run_coroutine_sync
from agentensemble.tools.base import ToolResult, as_tool_result
from agentensemble.tools.instrumented import InstrumentedTool
from agentensemble.tools.metrics import ToolMetrics
from agentensemble.tools.schema import FunctionSchema, function_schema, validate_arguments

F = TypeVar("F", bound=Callable[..., Any])

TOOL_ATTRIBUTE = "__agentensemble_tool__"
NONE_OUTPUT = "Success"


@dataclass(frozen=True, eq=False)
class ToolDefinition:
    """What ``@tool`` knows about a function: name, description, schema and behaviour.

    ``metrics`` is shared by every tool made from this definition (each bound object too).
    """

    function: Callable[..., Any]
    name: str
    description: str
    schema: FunctionSchema
    return_behavior: ReturnBehavior
    requires_approval: bool | Callable[[str], bool] | Any
    is_async: bool
    metrics: ToolMetrics = field(default_factory=ToolMetrics)
    timeout: float | None = None
    retries: int | None = None
    max_concurrency: int | None = None

    @property
    def is_method(self) -> bool:
        """Whether the function takes ``self``/``cls`` first (it must be bound to be called)."""
        return self.schema.skips_first


@overload
def tool(function: F, /) -> F: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    return_behavior: ReturnBehavior = ReturnBehavior.TO_LLM,
    requires_approval: bool | Callable[[str], bool] | Any = False,
    timeout: float | None = None,
    retries: int | None = None,
    max_concurrency: int | None = None,
) -> Callable[[F], F]: ...


def tool(
    function: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    return_behavior: ReturnBehavior = ReturnBehavior.TO_LLM,
    requires_approval: bool | Callable[[str], bool] | Any = False,
    timeout: float | None = None,
    retries: int | None = None,
    max_concurrency: int | None = None,
) -> F | Callable[[F], F]:
    """Mark a function (sync or async, free function or method) as a tool.

    Use bare (``@tool``) or with options. The name defaults to the function's name and is
    checked here (ToolNameError); the description defaults to the docstring's prose before its
    sections; parameter descriptions come from ``Annotated`` metadata or the ``Args:`` section.
    ``requires_approval`` (True, a callable taking the validated arguments as canonical JSON
    text, or ``Review.required(timeout=..., on_timeout=...)`` for this tool's own deadline)
    makes every call ask the review handler first. The function is returned unchanged.

    The execution policy governs the body, after any approval: ``timeout`` (seconds; past them
    the call fails with "timed out after N s" and the run goes on; an async body is cancelled,
    a sync one abandoned in its daemon thread, never waited for), ``retries`` (runs again, with
    backoff, after the body raised unexpectedly or timed out; never for a tool that declares
    approval) and ``max_concurrency`` (bodies of this tool at once across the run). A setting
    left None is taken from the agent's or ensemble's ``tool_policy``. ValueError naming the
    setting when one cannot work.
    """

    def decorate(fn: F) -> F:
        if not callable(fn) or isinstance(fn, type):
            raise TypeError(f"@tool decorates functions and methods, not {type(fn).__name__}")
        tool_name = name if name is not None else getattr(fn, "__name__", "")
        problem = tool_name_problem(tool_name)
        if problem:
            raise ToolNameError(f"{problem}; pass @tool(name=...) to choose another name")
        _gate.check_rule(requires_approval, f"@tool '{tool_name}'")
        check_policy(tool_name, timeout, retries, max_concurrency)
        schema = function_schema(fn, name=tool_name)
        definition = ToolDefinition(
            function=fn,
            name=tool_name,
            description=description if description is not None else schema.description,
            schema=schema,
            return_behavior=ReturnBehavior(return_behavior),
            requires_approval=requires_approval,
            is_async=inspect.iscoroutinefunction(fn),
            timeout=timeout,
            retries=retries,
            max_concurrency=max_concurrency,
        )
        try:
            setattr(fn, TOOL_ATTRIBUTE, definition)
        except (AttributeError, TypeError) as exc:
            raise TypeError(
                f"@tool cannot mark {fn!r}; decorate a def (for methods: in the class body)"
            ) from exc
        return fn

    if function is not None:
        return decorate(function)
    return decorate


def tool_definition(obj: object) -> ToolDefinition | None:
    """The ``@tool`` definition carried by a function or bound method, if any."""
    definition = getattr(obj, TOOL_ATTRIBUTE, None)
    return definition if isinstance(definition, ToolDefinition) else None


class FunctionTool(InstrumentedTool[BaseModel]):
    """A decorated function (or bound method) as an instrumented tool.

    Its input is the JSON arguments text: validated into the signature's model before the call
    (and again after a reviewer's Edit). Return value: str as is, None → "Success", anything
    else as JSON (the value itself kept as ``structured_output``).
    """

    def __init__(self, definition: ToolDefinition, target: Callable[..., Any]) -> None:
        self.definition = definition
        self._target = target
        self.name = definition.name
        self.description = definition.description
        self.return_behavior = definition.return_behavior
        self.requires_approval = definition.requires_approval
        self.timeout = definition.timeout
        self.retries = definition.retries
        self.max_concurrency = definition.max_concurrency

    @property
    def metrics(self) -> ToolMetrics:
        """Shared with every other binding of the same decorated function."""
        return self.definition.metrics

    def parameters_schema(self) -> dict[str, Any]:
        return self.definition.schema.parameters

    def _parse_input(self, raw: str) -> BaseModel:
        return validate_arguments(self.definition.schema.model, raw, self.name)

    def do_execute(self, input: BaseModel) -> ToolResult:
        if self.definition.is_async:
            return run_coroutine_sync(self.ado_execute(input), self.tool_context.loop)
        args, kwargs = self.definition.schema.call_arguments(input)
        return _function_result(self._target(*args, **kwargs))

    async def ado_execute(self, input: BaseModel) -> ToolResult:
        if not self.definition.is_async:
            return await in_worker_thread(self.do_execute, input)
        args, kwargs = self.definition.schema.call_arguments(input)
        return _function_result(await self._target(*args, **kwargs))

    def __repr__(self) -> str:
        return f"FunctionTool(name={self.name!r})"


def _function_result(value: Any) -> ToolResult:
    return as_tool_result(value, none_output=NONE_OUTPUT)


__all__ = ["FunctionTool", "ToolDefinition", "tool", "tool_definition"]
