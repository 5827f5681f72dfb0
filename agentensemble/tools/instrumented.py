"""Instrumented tools: the framework's ``execute`` wraps every call in timing, metrics, logging,
exception safety and the approval gate; subclasses write only the body (``do_execute``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Generic, TypeVar, final

from pydantic import BaseModel

from agentensemble._base.interrupts import ends_the_run
from agentensemble.errors import ConfigurationError, ToolArgumentsError
from agentensemble.tools import _approval, _gate
from agentensemble.tools._calls import exception_message, log_call, preview, stops_the_run
from agentensemble.tools._sync import in_worker_thread, run_coroutine_sync
from agentensemble.tools.base import AgentTool, ToolResult, as_tool_result, implements_body
from agentensemble.tools.context import ToolContext, current_tool_context
from agentensemble.tools.metrics import ToolMetrics

InputT = TypeVar("InputT")

EDIT_INVALID = _gate.EDIT_INVALID
_FINAL_METHODS = ("execute", "aexecute")


class InstrumentedTool(AgentTool, Generic[InputT]):
    """Shared machinery of AbstractAgentTool (str input) and TypedAgentTool (model input).

    ``execute``/``aexecute`` are final: a subclass that defines either raises TypeError at class
    creation. A call goes: parse the input (``_parse_input``) → approval gate → body
    (``do_execute`` or ``ado_execute``) → ToolResult; each step's failure becomes a failure
    result, except ExitEarlyError, ConfigurationError and review errors, which stop the run.
    """

    requires_approval: bool | Callable[[str], bool] | Any = False
    """True, a callable rule ``(input as shown) -> bool`` or ``Review.required(timeout=...)``."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for method in _FINAL_METHODS:
            if method in cls.__dict__:
                raise TypeError(
                    f"{cls.__name__} must not override {method}(): the framework's {method} "
                    "adds timing, metrics, logging, error handling and approval. "
                    "Implement do_execute(input) or async ado_execute(input) instead."
                )

    # -- the body: subclasses implement one of these two -------------------------------------

    def do_execute(self, input: InputT) -> ToolResult | str | None:
        """The tool's work (sync; runs in a worker thread when called from async code)."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement do_execute(input) or async ado_execute(input)"
        )

    async def ado_execute(self, input: InputT) -> ToolResult | str | None:
        """The tool's work (async). The default runs ``do_execute`` in a worker thread."""
        return await in_worker_thread(self.do_execute, input)

    def _parse_input(self, raw: str) -> InputT:
        """Turn the raw input text into what the body takes; raise ToolArgumentsError if bad."""
        raise NotImplementedError

    # -- services for the body ---------------------------------------------------------------

    @property
    def metrics(self) -> ToolMetrics:
        """This tool object's own counters (the run's registry counts by name as well)."""
        metrics: ToolMetrics = vars(self).setdefault("_agentensemble_metrics", ToolMetrics())
        return metrics

    @property
    def tool_context(self) -> ToolContext:
        """The framework's context for the call in progress (review handler, logger, ...)."""
        return current_tool_context()

    def request_approval(
        self,
        description: str,
        timeout: timedelta | float | None = None,
        on_timeout: Any = None,
    ) -> Any:
        """Ask the reviewer about ``description`` from inside the body; returns the decision
        (Continue / Edit / ExitEarly). With no review handler configured it auto-approves.
        Safe to call from a sync body running in a worker thread.
        """
        return _approval.request_approval(self.name, description, timeout, on_timeout)

    async def arequest_approval(
        self,
        description: str,
        timeout: timedelta | float | None = None,
        on_timeout: Any = None,
    ) -> Any:
        """Async twin of ``request_approval``."""
        return await _approval.arequest_approval(self.name, description, timeout, on_timeout)

    def needs_approval(self, input: str) -> bool:
        """Whether this call must be approved first (``requires_approval`` True or an enabled
        Review, or the callable says so for this input as the reviewer would see it).
        """
        return _gate.asks(self.requires_approval, input)

    # -- the framework's entry points (final) ------------------------------------------------

    @final
    def execute(self, input: str) -> ToolResult:
        """Run one call from sync code, instrumented. Do not override (see class docs)."""
        context = current_tool_context()
        started = time.perf_counter()
        try:
            result = self._run_sync(input, context)
        except BaseException as exc:
            self._check_stop(exc, input, context)
            return self._finish(
                input, ToolResult.failure(exception_message(exc)), context, started, exc
            )
        return self._finish(input, result, context, started)

    @final
    async def aexecute(self, input: str) -> ToolResult:
        """Run one call from async code, instrumented. Do not override (see class docs)."""
        context = current_tool_context()
        started = time.perf_counter()
        try:
            result = await self._run_async(input, context)
        except BaseException as exc:
            self._check_stop(exc, input, context)
            return self._finish(
                input, ToolResult.failure(exception_message(exc)), context, started, exc
            )
        return self._finish(input, result, context, started)

    def _run_sync(self, raw: str, context: ToolContext) -> ToolResult:
        parsed = self._parse_input(raw)
        asked = self._to_ask(parsed, raw)
        if asked is not None:
            shown, setting = asked
            verdict = _approval.review_tool_input(self.name, shown, setting)
            approved = self._approved(verdict, shown, parsed)
            if isinstance(approved, ToolResult):
                return approved
            parsed = approved
        with _gate.detached():
            if type(self).do_execute is not InstrumentedTool.do_execute:
                value = self.do_execute(parsed)
            else:
                value = run_coroutine_sync(self.ado_execute(parsed), context.loop)
        return self._to_result(value)

    async def _run_async(self, raw: str, context: ToolContext) -> ToolResult:
        parsed = self._parse_input(raw)
        asked = self._to_ask(parsed, raw)
        if asked is not None:
            shown, setting = asked
            verdict = await _approval.areview_tool_input(self.name, shown, setting)
            approved = self._approved(verdict, shown, parsed)
            if isinstance(approved, ToolResult):
                return approved
            parsed = approved
        return await _gate.run_body(self.name, self, self._body, parsed)

    async def _body(self, parsed: InputT) -> ToolResult:
        return self._to_result(await self.ado_execute(parsed))

    def _to_ask(self, parsed: InputT, raw: str) -> tuple[str, Any] | None:
        """The gate, for both entry points: the input as the reviewer sees it and the tool's
        ``Review`` setting when this call must be approved first; None when it runs as is
        (the input is rendered for a reviewer only when some call can ask: ``may_ask``)."""
        if not may_ask(self):
            return None
        shown = self._shown(parsed, raw)
        if not self.needs_approval(shown):
            return None
        return shown, _gate.review_setting(self.requires_approval)

    def _shown(self, parsed: InputT, raw: str) -> str:
        """The input as the reviewer sees it and a conditional rule reads it: exactly what the
        body receives (the text itself, or validated arguments as canonical JSON)."""
        if isinstance(parsed, BaseModel):
            return _gate.canonical_arguments(parsed)
        if isinstance(parsed, (dict, list)):  # parsed JSON (MCP tools): shown as parsed
            return json.dumps(parsed, ensure_ascii=False)
        return raw

    def _approved(self, verdict: _approval.Verdict, shown: str, parsed: InputT) -> Any:
        """The input to run after the reviewer answered, or the failure of a rejected call."""
        if not verdict.approved:
            return ToolResult.failure(verdict.rejection_message)
        if verdict.input == shown:
            return parsed
        edited = self._parse_edited(verdict.input)
        _gate.note_ran_with(self._shown(edited, verdict.input))
        return edited

    def _parse_edited(self, revised: str) -> InputT:
        """Parse a reviewer's edited input; when it is invalid, say the edit was (the model's
        own arguments were fine, and it would otherwise "fix" them in vain).
        """
        try:
            return self._parse_input(revised)
        except ToolArgumentsError as exc:
            raise ToolArgumentsError(f"{EDIT_INVALID}: {exc}") from exc

    def _to_result(self, value: Any) -> ToolResult:
        """Normalise the body's return value (None → success with empty output)."""
        return as_tool_result(value)

    def _check_stop(self, exc: BaseException, raw: str, context: ToolContext) -> None:
        """Re-raise errors that stop the run (ConfigurationError is logged at ERROR first), and
        Ctrl-C or a real cancellation; anything else is the call's failure."""
        if ends_the_run(exc):
            raise exc
        if not stops_the_run(exc):
            return
        if isinstance(exc, ConfigurationError):
            context.logger.error(
                f"{self.name}({preview(raw)}) stopped the run: {exc}", tool=self.name
            )
        raise exc

    def _finish(
        self,
        raw: str,
        result: ToolResult,
        context: ToolContext,
        started: float,
        exc: BaseException | None = None,
    ) -> ToolResult:
        duration = time.perf_counter() - started
        outcome = log_call(context, self.name, raw, result, duration, exc)
        self.metrics.record(outcome, duration)
        return result


class AbstractAgentTool(InstrumentedTool[str]):
    """The instrumented base for string-input tools: implement ``do_execute(input)`` (or
    ``async def ado_execute``) returning a ToolResult, a str or None (success, empty output).

    ``execute``/``aexecute`` belong to the framework (defining them raises TypeError): every
    call is timed, counted (``self.metrics`` and the run's registry), logged (INFO
    ``name(input) -> output``, WARNING on failure, DEBUG in full), exception-safe (an exception
    becomes a failure result the model sees; ExitEarlyError and ConfigurationError stop the
    run) and, with ``requires_approval``, approved by the reviewer before the body runs.
    """

    def _parse_input(self, raw: str) -> str:
        return raw


def may_ask(tool: InstrumentedTool[Any]) -> bool:
    """False when no call of ``tool`` can need approval (``requires_approval`` False, the
    default, and ``needs_approval`` not overridden); the resolver plans with it (``CallPlan``)."""
    return (
        tool.requires_approval is not False
        or type(tool).needs_approval is not InstrumentedTool.needs_approval
    )


def has_body(tool: AgentTool) -> bool:
    """Whether a tool implements its work: ``do_execute``/``ado_execute`` for instrumented tools,
    ``execute``/``aexecute`` for plain ones."""
    if isinstance(tool, InstrumentedTool):
        cls = type(tool)
        return (
            cls.do_execute is not InstrumentedTool.do_execute
            or cls.ado_execute is not InstrumentedTool.ado_execute
        )
    return implements_body(tool)


__all__ = ["AbstractAgentTool", "InstrumentedTool"]
