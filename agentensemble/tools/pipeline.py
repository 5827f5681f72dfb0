"""ToolPipeline: several tools run one after another inside a single tool call.

The model calls the pipeline once, with one string; every step runs in that call and each step's
output is the next step's input, so there is no model round trip between steps and the model
sees only the final step's result. A pipeline is an ``AbstractAgentTool``: resolved, timed,
counted, logged and (if asked) approved like any other tool.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any

from pydantic import BaseModel, ValidationError

from agentensemble._base.dataclass import dataclass
from agentensemble._base.interrupts import ends_the_run
from agentensemble._base.naming import tool_name_problem
from agentensemble.errors import ConfigurationError, ToolNameError
from agentensemble.outputs import ReturnBehavior
from agentensemble.tools import _gate
from agentensemble.tools._calls import (
    CallPolicy,
    check_policy,
    decided,
    exception_message,
    log_call,
    own_policy,
    policed,
    stops_the_run,
)
from agentensemble.tools.base import AgentTool, ToolResult
from agentensemble.tools.context import ToolContext, current_tool_context
from agentensemble.tools.decorator import FunctionTool, ToolDefinition, tool_definition
from agentensemble.tools.instrumented import AbstractAgentTool, InstrumentedTool, has_body
from agentensemble.tools.schema import DuplicateKeyError, loads_unique

Adapter = Callable[[ToolResult], str]
ApprovalRule = bool | Callable[[str], bool]

_ACCEPTED = (
    "a step must be an AgentTool instance (AgentTool, AbstractAgentTool or TypedAgentTool "
    "subclass, or another ToolPipeline), a function or bound method decorated with @tool, or a "
    "PipelineStep wrapping one of these"
)


class PipelineErrorStrategy(str, Enum):
    """What a pipeline does when a step fails."""

    FAIL_FAST = "fail_fast"
    """The first failed step's result is the pipeline's result; later steps are skipped."""
    CONTINUE_ON_FAILURE = "continue_on_failure"
    """The failed step's error message (or "") is the next step's input; the last step's
    result is the pipeline's result."""


@dataclass(frozen=True)
class PipelineStep:
    """One step of a pipeline: a tool, and optionally an adapter for the hand-off.

    ``adapter`` turns this step's successful result (the whole ToolResult, structured output
    included) into the next step's input text. It is never called on a failed step, nor on the
    last step (whose result is the pipeline's result as it is).
    """

    tool: AgentTool | Callable[..., Any]
    adapter: Adapter | None = None

    def __post_init__(self) -> None:
        if self.adapter is not None and not callable(self.adapter):
            raise ConfigurationError(
                f"PipelineStep adapter must be a callable (ToolResult) -> str, "
                f"got {type(self.adapter).__name__}"
            )


@dataclass(frozen=True)
class _Stage:
    """A step ready to run: the AgentTool itself and how pipeline text becomes its input."""

    tool: AgentTool
    adapter: Adapter | None
    to_input: Callable[[str], str]
    policy: CallPolicy | None = None
    """The step's own timeout, retries and bound on bodies at once (None: none set)."""

    @property
    def name(self) -> str:
        return self.tool.name


class _AdapterFailed(Exception):
    """An adapter raised or returned no str: ends the pipeline with a failure (never escapes
    the pipeline's instrumented execute, which logs it at WARNING with the traceback). Its
    message already names what raised, so the model sees it as is."""

    names_its_cause = True


class ToolPipeline(AbstractAgentTool):
    """Tools chained into one tool: the model calls it once and every step runs in that call.

    ``steps`` are AgentTools, ``@tool`` functions (or bound methods), nested pipelines, or
    ``PipelineStep(tool, adapter=...)``. Each step's ``output`` is the next step's input; the
    last step's result is the pipeline's. ``error_strategy`` decides what a failed step does
    (see PipelineErrorStrategy). The name defaults to the step names joined by ``_then_`` and
    the description to ``Pipeline: a -> b -> c``.

    Steps receive text. A typed-input tool parses it as JSON into its model. A decorated
    function with one parameter (or one required one) gets the text as that argument, parsed
    as JSON when the text as such does not fit (a JSON object of named arguments also works);
    with several required parameters the text must be a JSON object of named arguments; with
    none the text is ignored.

    The framework's tool context (review handler, metrics, logger) reaches every step, nested
    pipelines included: an approval-gated step asks the run's reviewer when it runs, and makes
    the pipeline report ``requires_approval`` so a missing review handler is found before the
    first model call. The pipeline itself asks only if ``requires_approval`` is set on it.
    Steps' own ``return_behavior`` is ignored; the pipeline's counts. ``timeout``, ``retries``
    and ``max_concurrency`` govern the whole pipeline's call (an agent's ``tool_policy`` fills
    what it leaves unset); a step's own settings govern that step inside it.
    """

    def __init__(
        self,
        steps: Sequence[AgentTool | PipelineStep | Callable[..., Any]],
        name: str | None = None,
        description: str | None = None,
        error_strategy: PipelineErrorStrategy | str = PipelineErrorStrategy.FAIL_FAST,
        *,
        return_behavior: ReturnBehavior | str = ReturnBehavior.TO_LLM,
        timeout: float | None = None,
        retries: int | None = None,
        max_concurrency: int | None = None,
    ) -> None:
        if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
            raise ConfigurationError(
                f"ToolPipeline steps must be a list of tools, got {type(steps).__name__}; "
                "use ToolPipeline.of(a, b, c) to pass tools one by one"
            )
        if not steps:
            raise ConfigurationError("ToolPipeline needs at least one step, got none")
        self._steps = tuple(_as_step(item) for item in steps)
        self._stages = tuple(_stage(step, index) for index, step in enumerate(self._steps, 1))
        names = [stage.name for stage in self._stages]
        self.name = _checked_name(name, names)
        self.description = (
            description if description is not None else "Pipeline: " + " -> ".join(names)
        )
        try:
            self.error_strategy = PipelineErrorStrategy(error_strategy)
            self.return_behavior = ReturnBehavior(return_behavior)
        except ValueError as exc:
            raise ConfigurationError(f"ToolPipeline '{self.name}': {exc}") from exc
        self._own_approval: ApprovalRule = False
        try:  # the whole pipeline's policy; each step keeps its own inside it
            check_policy(self.name, timeout, retries, max_concurrency)
        except ValueError as exc:
            raise ConfigurationError(f"ToolPipeline '{self.name}': {exc}") from None
        self.timeout = timeout
        self.retries = retries
        self.max_concurrency = max_concurrency

    @classmethod
    def of(cls, *tools: AgentTool | PipelineStep | Callable[..., Any]) -> ToolPipeline:
        """A pipeline of ``tools`` in order, with the default name, description and strategy."""
        return cls(list(tools))

    @property
    def steps(self) -> tuple[PipelineStep, ...]:
        """The steps as given (bare tools wrapped in a PipelineStep with no adapter)."""
        return self._steps

    @property
    def step_tools(self) -> tuple[AgentTool, ...]:
        """The AgentTool each step runs (a FunctionTool for a decorated function)."""
        return tuple(stage.tool for stage in self._stages)

    # -- approval: steps ask for themselves; the pipeline only reports that they will --------

    @property
    def requires_approval(self) -> ApprovalRule:
        """The pipeline's own rule if one was set; else True when some step (at any depth)
        requires approval, so the resolver reports it and a missing handler fails early.
        """
        if _gate.declares_approval(self._own_approval):
            return self._own_approval
        return bool(self.approval_steps)

    @requires_approval.setter
    def requires_approval(self, rule: ApprovalRule) -> None:
        """Make the pipeline itself ask the reviewer about its whole input before step one."""
        _gate.check_rule(rule, f"ToolPipeline '{self.name}'")
        self._own_approval = rule

    @property
    def approval_steps(self) -> list[str]:
        """Names of the steps that require approval (a nested pipeline's name stands for it)."""
        return [stage.name for stage in self._stages if _requires_approval(stage.tool)]

    @property
    def durable_itself(self) -> bool:
        """Whether a durable run runs the pipeline in the run itself rather than as one step:
        when a step asks approvals and the run's review handler waits in the run (such as
        DurableReviewHandler), which it cannot do inside a step. Each step's body is then a
        step of its own, and each approval waits durably between them."""
        handler = current_tool_context().review_handler
        return bool(self.approval_steps) and getattr(handler, "durable_itself", False) is True

    def needs_approval(self, input: str) -> bool:
        """Only the pipeline's own rule: gated steps ask when they run, not up front."""
        return _gate.asks(self._own_approval, input)

    # -- running ------------------------------------------------------------------------------

    async def ado_execute(self, input: str) -> ToolResult:
        """Run the steps in order, handing each one's output (or adapted result) to the next."""
        context = current_tool_context()
        text = input
        result = ToolResult.success(input)
        last = len(self._stages)
        for index, stage in enumerate(self._stages, start=1):
            context.logger.debug(
                "pipeline step", pipeline=self.name, step=index, of=last, tool=stage.name
            )
            result = await _run_stage(stage, text, context)
            if not result.is_success:
                if self.error_strategy == PipelineErrorStrategy.FAIL_FAST:  # str values too
                    return result
                text = result.error_message or ""
            elif index < last:
                text = self._hand_off(stage, index, result)
        return result

    def _hand_off(self, stage: _Stage, index: int, result: ToolResult) -> str:
        """The next step's input: the adapter's text if there is one, else the output."""
        if stage.adapter is None:
            return result.output
        where = f"Pipeline '{self.name}': the adapter after step {index} ('{stage.name}')"
        try:
            adapted = stage.adapter(result)
        except Exception as exc:
            if stops_the_run(exc):
                raise
            raise _AdapterFailed(f"{where} raised {exception_message(exc)}") from exc
        if not isinstance(adapted, str):
            raise _AdapterFailed(f"{where} returned {type(adapted).__name__}, expected str")
        return adapted

    def __repr__(self) -> str:
        names = [stage.name for stage in self._stages]
        return f"ToolPipeline(name={self.name!r}, steps={names!r})"


# -- construction helpers ---------------------------------------------------------------------


def _as_step(item: AgentTool | PipelineStep | Callable[..., Any]) -> PipelineStep:
    return item if isinstance(item, PipelineStep) else PipelineStep(item)


def _stage(step: PipelineStep, index: int) -> _Stage:
    """Check one step and turn it into a runnable stage (ConfigurationError naming it), with
    its own policy decided once."""
    stage = _checked_stage(step, f"ToolPipeline step {index}")
    try:
        own, _ = own_policy(stage.tool, stage.name)
    except ValueError as exc:
        raise ConfigurationError(f"ToolPipeline step {index}: {exc}") from None
    gated = _gate.declares_approval(getattr(stage.tool, "requires_approval", False))
    return dataclasses.replace(stage, policy=decided(stage.name, own, gated=gated))


def _checked_stage(step: PipelineStep, where: str) -> _Stage:
    item = step.tool
    if isinstance(item, AgentTool):
        name = getattr(item, "name", None)
        problem = tool_name_problem(name)
        if problem:
            raise ToolNameError(f"{where} ({type(item).__name__}): {problem}")
        if not has_body(item):
            raise ConfigurationError(
                f"{where} ('{name}', {type(item).__name__}) implements no body: implement "
                + (
                    "do_execute(input) or async ado_execute(input)"
                    if isinstance(item, InstrumentedTool)
                    else "execute(input) or async aexecute(input)"
                )
            )
        return _Stage(item, step.adapter, _same_text)
    definition = tool_definition(item)
    if definition is not None:
        if definition.is_method and not _is_bound(item):
            raise ConfigurationError(
                f"{where}: '{definition.name}' is a method; pass the bound method "
                f"obj.{definition.name}, not the plain function"
            )
        function_tool = FunctionTool(definition, item)
        return _Stage(function_tool, step.adapter, _arguments_builder(definition))
    if isinstance(item, type):
        raise ConfigurationError(
            f"{where} is the class '{item.__name__}', not an instance: pass {item.__name__}(...)"
        )
    raise ConfigurationError(
        f"{where} is an object of type '{type(item).__name__}', not a tool: {_ACCEPTED}"
    )


def _checked_name(name: str | None, step_names: list[str]) -> str:
    if name is not None:
        problem = tool_name_problem(name)
        if problem:
            raise ToolNameError(f"ToolPipeline: {problem}")
        return name
    default = "_then_".join(step_names)
    problem = tool_name_problem(default)
    if problem:
        raise ToolNameError(
            f"ToolPipeline: the default name made from the step names is invalid: {problem}. "
            "Pass name=... to choose a shorter one"
        )
    return default


def _is_bound(item: object) -> bool:
    return getattr(item, "__self__", None) is not None


def _requires_approval(tool: AgentTool) -> bool:
    """The resolver's reading of ``requires_approval``: a callable rule, a true value or an
    enabled Review."""
    return _gate.declares_approval(getattr(tool, "requires_approval", False))


def _same_text(text: str) -> str:
    return text


def _arguments_builder(definition: ToolDefinition) -> Callable[[str], str]:
    """How pipeline text becomes a decorated function's JSON arguments.

    No parameter: ``{}``. One parameter ``p`` (or one *required* parameter ``p`` among
    optional ones): the text itself when it is a valid ``p`` (a ``str`` parameter always gets
    the text as is); else the text parsed as JSON, as ``p``'s value or, if it is an object that
    fits, as the arguments object; when nothing fits, the JSON value (or the text) is passed as
    ``p`` and the function tool's validation says what is wrong. Several required parameters:
    the text is the JSON arguments object, as the model would send it.
    """
    parameters = definition.schema.parameters
    names = list(parameters.get("properties") or {})
    required = list(parameters.get("required") or [])
    if not names:
        return lambda _text: "{}"
    if len(names) == 1:
        target = names[0]
    elif len(required) == 1:
        target = required[0]
    else:
        return _same_text
    model = definition.schema.model

    def build(text: str) -> str:
        as_text = {target: text}
        if _fits(model, as_text):
            return json.dumps(as_text, ensure_ascii=False)
        try:
            value = loads_unique(text)
        except DuplicateKeyError:  # validation then tells the step what is wrong
            return text
        except ValueError:  # not JSON, too long a number, or nested too deeply
            return json.dumps(as_text, ensure_ascii=False)
        as_value = {target: value}
        if not _fits(model, as_value) and isinstance(value, dict) and _fits(model, value):
            return text
        return json.dumps(as_value, ensure_ascii=False)

    return build


def _fits(model: type[BaseModel], arguments: dict[str, Any]) -> bool:
    try:
        model.model_validate(arguments)
    except ValidationError:
        return False
    return True


# -- running one step -------------------------------------------------------------------------


async def _run_stage(stage: _Stage, text: str, context: ToolContext) -> ToolResult:
    """One step: instrumented tools do their own logging, metrics, safety and approval; a plain
    AgentTool is given the same treatment here (as the resolver gives it for a direct call),
    its approval gate included. Errors that stop the run propagate.
    """
    tool_input = stage.to_input(text)
    with _gate.detached():  # a step's edit is the step's business, not the pipeline call's
        if stage.policy is None:
            return await _run_step(stage, tool_input, context)
        slots = context.tool_slots
        with policed(stage.policy, slots.get(stage.policy) if slots is not None else None):
            return await _run_step(stage, tool_input, context)


async def _run_step(stage: _Stage, tool_input: str, context: ToolContext) -> ToolResult:
    """The step's call, under its own policy when it has one (its body's runs read it)."""
    if isinstance(stage.tool, InstrumentedTool):
        return await stage.tool.aexecute(tool_input)
    return await _run_plain_stage(stage, tool_input, context)


async def _run_plain_stage(stage: _Stage, tool_input: str, context: ToolContext) -> ToolResult:
    started = time.perf_counter()
    error: BaseException | None = None
    try:
        rule = getattr(stage.tool, "requires_approval", False)
        takes_arguments = stage.tool.parameters_schema() is not None
        gated = await _gate.agate_plain(
            stage.name, rule, tool_input, takes_arguments=takes_arguments
        )
        if isinstance(gated, ToolResult):
            result = gated
        else:
            tool_input = gated
            plain = stage.tool
            # a step of its own when the pipeline runs in a durable run itself (else a plain call)
            result = await _gate.run_body(stage.name, plain, _gate.run_plain, plain, tool_input)
    except BaseException as exc:
        if ends_the_run(exc) or stops_the_run(exc):
            raise
        result, error = ToolResult.failure(exception_message(exc)), exc
    log_call(context, stage.name, tool_input, result, time.perf_counter() - started, error)
    return result


__all__ = ["PipelineErrorStrategy", "PipelineStep", "ToolPipeline"]
