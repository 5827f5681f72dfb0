"""One way in: every kind of tool becomes an ``ExecutableTool`` with an OpenAI function spec.

Accepted: AgentTool instances (AgentTool subclasses, AbstractAgentTool, TypedAgentTool,
pipelines), ``@tool`` functions and bound methods, and objects whose methods carry ``@tool``
(each such method becomes a tool). The executor knows only ``ResolvedTools``/``ExecutableTool``.
"""

from __future__ import annotations

import copy
import inspect
import json
import logging
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from agentensemble._base.dataclass import dataclass
from agentensemble._base.interrupts import ends_the_run
from agentensemble._base.naming import tool_name_problem
from agentensemble.errors import ConfigurationError, ToolArgumentsError, ToolNameError
from agentensemble.hints import warn_undescribed_tool
from agentensemble.llm.types import ToolSpec
from agentensemble.logging import get_logger
from agentensemble.outputs import ReturnBehavior
from agentensemble.tools import _gate
from agentensemble.tools._calls import (
    CallPlan,
    decided,
    exception_message,
    log_call,
    own_policy,
    preview,
    stops_the_run,
)
from agentensemble.tools._gate import ToolCallResult
from agentensemble.tools.base import (
    AgentTool,
    ToolResult,
    as_tool_result,
    tool_description,
)
from agentensemble.tools.context import ToolContext, current_tool_context
from agentensemble.tools.decorator import FunctionTool, ToolDefinition, tool_definition
from agentensemble.tools.instrumented import InstrumentedTool, has_body, may_ask
from agentensemble.tools.schema import load_arguments_json
from agentensemble.tools.source import ToolSource

INPUT_DESCRIPTION = "The input to pass to the tool"
INPUT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": INPUT_DESCRIPTION}},
    "required": ["input"],
}
_ACCEPTED = (
    "pass an AgentTool instance (an AgentTool, AbstractAgentTool or TypedAgentTool subclass, "
    "a ToolPipeline, a built-in tool), a function decorated with @tool, an object whose methods "
    "are decorated with @tool, or a tool source such as an MCP server"
)

_log = get_logger()


def extract_input(arguments: str, tool_name: str) -> str:
    """The ``input`` string of an AgentTool call, from the model's JSON arguments.

    Strict about JSON, lenient about shape, because models stumble on single-string tools:
    ``{"input": "x"}`` → ``x``; a non-string ``input`` value → its JSON text; a bare JSON
    string → that string; an object with one other key (``{"query": "x"}``) → its value; other
    keys beside ``input`` are ignored. Not JSON, ``{}``, several keys without ``input``, or
    another JSON type → ToolArgumentsError telling the model the expected shape.
    """
    prefix = f"Invalid arguments for '{tool_name}'"
    expected = 'Send {"input": "<text>"}.'
    text = arguments.strip()
    data = load_arguments_json(text, prefix, expected) if text else {}
    if isinstance(data, str):
        return data
    if not isinstance(data, dict):
        raise ToolArgumentsError(f"{prefix}: expected a JSON object. {expected}")
    if "input" in data:
        value = data["input"]
    elif len(data) == 1:
        (value,) = data.values()
    else:
        value = None
    if value is None:
        raise ToolArgumentsError(f"{prefix}: input: Field required. {expected}")
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class ExecutableTool:
    """The single shape the executor runs: a name, a spec, a ``CallPlan`` and
    ``run(arguments)``; this class runs a plain ``AgentTool`` (gate, timing, logging here),
    ``InstrumentedExecutable`` one whose own ``execute`` does all that.

    ``run`` never raises for anything a model or a tool can get wrong: bad JSON, failed
    validation and exceptions all become failure results. Only ExitEarlyError,
    ConfigurationError (and cancellation) propagate.
    """

    def __init__(
        self,
        tool: AgentTool,
        *,
        name: str,
        description: str,
        parameters: dict[str, Any] | None,
        return_behavior: ReturnBehavior,
        plan: CallPlan,
        source: object,
    ) -> None:
        self.tool = tool
        self.name = name
        self.step_name = f"tool:{name}"  # its calls' name as steps of a durable run
        self.description = description
        self.return_behavior = return_behavior
        self.plan = plan
        self.requires_approval = plan.declares_approval
        self.source = source
        self.takes_arguments = parameters is not None
        self.parameters: dict[str, Any] = (
            parameters if parameters is not None else copy.deepcopy(INPUT_PARAMETERS)
        )

    @property
    def spec(self) -> ToolSpec:
        """The OpenAI function-calling spec."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    async def run(self, arguments: str) -> ToolResult:
        """Run one call with the JSON arguments text exactly as the model sent it."""
        return (await self.call(arguments)).result

    async def call(self, arguments: str) -> ToolCallResult:
        """Run one call; the result, and the arguments it ran with when a reviewer's edit
        changed them (canonical JSON, e.g. ``{"input": "..."}`` for a single-string tool)."""
        if not self.plan.can_ask:  # no gate of this call asks, so none notes an edit
            return ToolCallResult(await self._run(arguments))
        with _gate.recording() as ran_with:
            result = await self._run(arguments)
        if ran_with.input is None:
            return ToolCallResult(result)
        ran = ran_with.input
        if not self.takes_arguments:
            ran = json.dumps({"input": ran}, ensure_ascii=False)
        return ToolCallResult(result, ran_with=ran)

    async def _run(self, arguments: str) -> ToolResult:
        """The plain tool's call: its input (a key named twice refused), its gate, its body
        (a step of its own where a durable run asks so), each failure logged and counted."""
        context = current_tool_context()
        started = time.perf_counter()
        try:
            tool_input = self._tool_input(arguments)
            gated = await _gate.agate_plain(  # reads the tool's rule at each call
                self.name,
                getattr(self.tool, "requires_approval", False),
                tool_input,
                takes_arguments=self.takes_arguments,
            )
            if isinstance(gated, ToolResult):  # rejected
                log_call(context, self.name, tool_input, gated, time.perf_counter() - started)
                return gated
            tool_input = gated
        except BaseException as exc:  # bad arguments, or the approval failed: the tool did not run
            return _refused(context, self.name, arguments, exc, started)
        error: BaseException | None = None
        try:
            result = await _gate.run_body(
                self.name, self.tool, _gate.run_plain, self.tool, tool_input
            )
        except BaseException as exc:
            if ends_the_run(exc):
                raise
            if stops_the_run(exc):
                if isinstance(exc, ConfigurationError):
                    _log.error(f"{self.name}({preview(tool_input)}) stopped the run: {exc}")
                raise
            result, error = ToolResult.failure(exception_message(exc)), exc
        log_call(context, self.name, tool_input, result, time.perf_counter() - started, error)
        return result

    def _tool_input(self, arguments: str) -> str:
        """What the tool receives: the ``input`` string, or the arguments text (a key named
        twice is refused: the reviewer and the tool would each read another value)."""
        if not self.takes_arguments:
            return extract_input(arguments, self.name)
        _gate.canonical_json(arguments, self.name)
        return arguments

    def __repr__(self) -> str:
        return f"ExecutableTool(name={self.name!r}, tool={self.tool!r})"


class InstrumentedExecutable(ExecutableTool):
    """An ``InstrumentedTool`` resolved: its own ``execute`` validates the input, asks the
    reviewer, times, logs and counts the call, and runs its body detached from the note."""

    async def _run(self, arguments: str) -> ToolResult:
        try:
            tool_input = arguments if self.takes_arguments else extract_input(arguments, self.name)
        except ToolArgumentsError as exc:  # never reached the tool: logged and counted here
            return _refused(current_tool_context(), self.name, arguments, exc, None)
        try:
            return as_tool_result(await self.tool.aexecute(tool_input))
        except BaseException as exc:  # its execute ends every other failure as a result
            if ends_the_run(exc) or stops_the_run(exc):
                raise
            result = ToolResult.failure(exception_message(exc))
            log_call(current_tool_context(), self.name, tool_input, result, 0.0, exc)
            return result


def _refused(
    context: ToolContext, name: str, arguments: str, exc: BaseException, started: float | None
) -> ToolResult:
    """The failure of a call that never reached its tool (bad arguments, a failed approval),
    logged and counted; what stops the run is raised again."""
    if not isinstance(exc, ToolArgumentsError) and (ends_the_run(exc) or stops_the_run(exc)):
        raise exc
    result = ToolResult.failure(
        str(exc) if isinstance(exc, ToolArgumentsError) else exception_message(exc)
    )
    duration = 0.0 if started is None else time.perf_counter() - started
    log_call(context, name, arguments, result, duration, exc)
    return result


class ResolvedTools:
    """The tools of one agent on one task: specs for the model, executables by name."""

    def __init__(self, tools: Sequence[ExecutableTool] = ()) -> None:
        self._tools = tuple(tools)
        self._by_name = {tool.name: tool for tool in self._tools}
        self._specs: list[ToolSpec] | None = None
        self._gated: bool | None = None

    @property
    def tools(self) -> tuple[ExecutableTool, ...]:
        """Every tool, in input order."""
        return self._tools

    @property
    def specs(self) -> list[ToolSpec]:
        """OpenAI function-calling specs, in input order (built once: the same tools are
        resolved once and kept between runs)."""
        if self._specs is None:
            self._specs = [tool.spec for tool in self._tools]
        return list(self._specs)

    @property
    def names(self) -> list[str]:
        """Tool names, in input order."""
        return [tool.name for tool in self._tools]

    @property
    def approval_required(self) -> bool:
        """Whether some tool declares ``requires_approval`` (so a review handler is needed)."""
        if self._gated is None:  # fixed per tool: asked on every run of the kept resolution
            self._gated = any(tool.requires_approval for tool in self._tools)
        return self._gated

    def get(self, name: str) -> ExecutableTool | None:
        """The tool called ``name``, or None."""
        return self._by_name.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[ExecutableTool]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ResolvedTools({self.names!r})"


class ToolResolver:
    """Turns what an agent and its task list as tools into one ``ResolvedTools``.

    Raises ToolNameError for a bad name, ConfigurationError for an object that is no tool or a
    name used twice. The same object listed twice (say on the agent and on the task) counts
    once.
    """

    def resolve(self, tools: Iterable[object]) -> ResolvedTools:
        """Resolve ``tools`` (in order) into executables and specs."""
        resolved: list[ExecutableTool] = []
        seen: set[tuple[int, ...]] = set()
        names: dict[str, ExecutableTool] = {}
        items = list(tools)  # keeps every object alive while ids are compared
        for item in items:
            for key, executable in self._expand(item):
                if key in seen:
                    continue
                seen.add(key)
                if executable.name in names:
                    first = names[executable.name]
                    raise ConfigurationError(
                        f"Duplicate tool name: '{executable.name}'" + _origins(first, executable)
                    )
                names[executable.name] = executable
                resolved.append(executable)
        result = ResolvedTools(resolved)
        if resolved and _log.isEnabledFor(logging.DEBUG):  # the text is costly with many tools
            _log.debug("tool specs", specs=json.dumps(result.specs, ensure_ascii=False))
        return result

    def _expand(self, item: object) -> list[tuple[tuple[int, ...], ExecutableTool]]:
        if isinstance(item, ToolSource):  # tools listed by a started source (empty before)
            return [
                ((id(item), index), _from_agent_tool(tool, source=item))
                for index, tool in enumerate(item.tools())
            ]
        if isinstance(item, AgentTool):
            return [((id(item),), _from_agent_tool(item))]
        definition = tool_definition(item)
        if definition is not None:
            if inspect.ismethod(item):
                return [(_identity(item), _from_function(definition, item, source=item))]
            if definition.is_method:
                raise ConfigurationError(
                    f"Tool '{definition.name}' is a method: pass the object that carries it "
                    f"(or the bound method obj.{definition.name}), not the plain function"
                )
            executable = _from_function(definition, definition.function, source=item)
            return [(_identity(item), executable)]
        if isinstance(item, type):
            raise ConfigurationError(
                f"Got the class '{item.__name__}', not an instance: pass {item.__name__}(...)"
            )
        methods = _decorated_methods(item)
        if not methods:
            raise ConfigurationError(
                f"Object of type '{type(item).__name__}' is not a tool: {_ACCEPTED}"
            )
        expanded: list[tuple[tuple[int, ...], ExecutableTool]] = []
        for attribute in methods:
            bound = getattr(item, attribute)
            method_definition = tool_definition(bound)
            assert method_definition is not None  # found by _decorated_methods
            executable = _from_function(method_definition, bound, source=item)
            expanded.append((_identity(bound), executable))
        return expanded


def _origins(first: ExecutableTool, second: ExecutableTool) -> str:
    """`` (from X and from Y)`` when a tool source is involved (the name alone says enough for
    two tools the user wrote: both are in their code)."""
    if not isinstance(first.source, ToolSource) and not isinstance(second.source, ToolSource):
        return ""
    return f" (from {_origin(first)} and from {_origin(second)})"


def _origin(executable: ExecutableTool) -> str:
    source = executable.source
    if isinstance(source, ToolSource):
        origin = getattr(executable.tool, "origin", None)
        return origin if isinstance(origin, str) else source.describe()
    if isinstance(source, AgentTool):
        return f"{type(source).__name__} tool"
    name = getattr(source, "__qualname__", None)
    if isinstance(name, str):
        return f"function {name}"
    return f"{type(source).__name__} object"


def _identity(callable_: object) -> tuple[int, ...]:
    """Same key for the same function, or the same method of the same object."""
    if inspect.ismethod(callable_):
        return (id(callable_.__self__), id(callable_.__func__))
    return (id(callable_),)


def _decorated_methods(obj: object) -> list[str]:
    """Names of the ``@tool`` methods of ``obj``'s class, base classes first, in definition
    order; a subclass overriding one without ``@tool`` removes it.
    """
    names: dict[str, None] = {}
    for klass in reversed(type(obj).__mro__):
        for attribute, raw in vars(klass).items():
            function = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
            if tool_definition(function) is not None:
                names[attribute] = None
            else:
                names.pop(attribute, None)
    return list(names)


@dataclass(frozen=True)
class _CheckedFunction:
    """What checking a ``@tool`` definition found; it cannot change, so it is done once."""

    name: str
    description: str
    parameters: dict[str, Any]
    return_behavior: ReturnBehavior
    plan: CallPlan


# keyed weakly by definition; values hold nothing that refers back to it
_checked_functions: weakref.WeakKeyDictionary[ToolDefinition, _CheckedFunction] = (
    weakref.WeakKeyDictionary()
)


def _from_function(
    definition: ToolDefinition, target: Callable[..., Any], source: object
) -> ExecutableTool:
    """A decorated function or bound method; its definition is checked on first use only (a
    run with 1000 tools resolves them in about a millisecond)."""
    tool = FunctionTool(definition, target)
    checked = _checked_functions.get(definition)
    if checked is None:
        executable = _from_agent_tool(tool, source=source)
        _checked_functions[definition] = _CheckedFunction(
            executable.name,
            executable.description,
            executable.parameters,
            executable.return_behavior,
            executable.plan,
        )
        return executable
    return InstrumentedExecutable(
        tool,
        name=checked.name,
        description=checked.description,
        parameters=checked.parameters,
        return_behavior=checked.return_behavior,
        plan=checked.plan,
        source=source,
    )


def _from_agent_tool(tool: AgentTool, source: object | None = None) -> ExecutableTool:
    kind = type(tool).__name__
    name = getattr(tool, "name", None)
    problem = tool_name_problem(name)
    if problem or not isinstance(name, str):
        raise ToolNameError(f"{kind}: {problem}. Set name as a class attribute or in __init__")
    if not has_body(tool):
        raise ConfigurationError(
            f"Tool '{name}' ({kind}) implements no body: "
            + (
                "implement do_execute(input) or async ado_execute(input)"
                if isinstance(tool, InstrumentedTool)
                else "implement execute(input) or async aexecute(input)"
            )
        )
    try:
        behavior = ReturnBehavior(getattr(tool, "return_behavior", ReturnBehavior.TO_LLM))
    except ValueError as exc:
        raise ConfigurationError(f"Tool '{name}' has an invalid return_behavior: {exc}") from exc
    rule = getattr(tool, "requires_approval", False)
    _gate.check_rule(rule, f"Tool '{name}'")
    description = tool_description(tool)
    if not description.strip():
        warn_undescribed_tool(name, "a @tool function" if isinstance(tool, FunctionTool) else kind)
    plan = plan_call(tool, _gate.declares_approval(rule))
    executable = InstrumentedExecutable if plan.instrumented else ExecutableTool
    return executable(
        tool,
        name=name,
        description=description,
        parameters=tool.parameters_schema(),
        return_behavior=behavior,
        plan=plan,
        source=tool if source is None else source,
    )


def plan_call(tool: AgentTool, declares_approval: bool) -> CallPlan:
    """How every call of ``tool`` runs (see ``CallPlan``), read from the tool once.

    A plain ``AgentTool``'s rule is read again at each call by its gate, so some call of it
    may always ask. ``durable_itself`` counts when set on the class or the object (a
    delegation), not as a property whose answer depends on the run (a pipeline's: its
    approvals wait in the run only with a durable review handler, which ``own_steps`` asks).
    """
    instrumented = isinstance(tool, InstrumentedTool)
    name = str(getattr(tool, "name", type(tool).__name__))
    try:  # timeout, retries, max_concurrency: checked once, here
        own, own_deadline = own_policy(tool, name)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    makes_own_steps = inspect.getattr_static(tool, "durable_itself", False) is True
    return CallPlan(
        instrumented=instrumented,
        declares_approval=declares_approval,
        can_ask=may_ask(tool) if isinstance(tool, InstrumentedTool) else True,
        body_in_thread=type(tool) is FunctionTool and not tool.definition.is_async,
        makes_own_steps=makes_own_steps,
        policy=decided(name, own, gated=declares_approval),
        own=own,
        own_deadline=own_deadline,
    )


__all__ = [
    "ExecutableTool",
    "InstrumentedExecutable",
    "ResolvedTools",
    "ToolCallResult",
    "ToolResolver",
    "extract_input",
    "plan_call",
]
