"""The one place the tool system talks to ``agentensemble_review``, imported lazily.

Nothing here imports the review package until a review handler is actually configured, so tools
with no approval run in a process where ``agentensemble_review`` cannot be imported at all.
The rest of the tool system sees only ``Verdict`` (approve, maybe with edited input, or reject).
Inside a durable run's tool step a request's id is the step's key (``execution.steps.step_key``),
so a recovery that re-runs the step asks a webhook about the same review, not a new one.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta
from types import ModuleType
from typing import Any

from agentensemble._base.dataclass import dataclass
from agentensemble.errors import ConfigurationError
from agentensemble.events import ReviewDecided, ReviewRequested
from agentensemble.steps import step_key  # a seam with no imports of its own
from agentensemble.tools.context import ToolContext, current_tool_context

NO_REASON = "no reason given"


@dataclass(frozen=True)
class Verdict:
    """A reviewer's answer about one tool call, in tool-system terms."""

    approved: bool
    input: str
    reason: str | None = None
    refusal: str | None = None
    """Why the review service refused to even ask (the request's size or content), if it did."""

    @property
    def rejection_message(self) -> str:
        """What the model sees when the call was rejected."""
        if self.refusal is not None:
            return f"the approval request was refused by the review service: {self.refusal}"
        return f"Rejected by reviewer: {self.reason or NO_REASON}"


class _AutoApproved:
    """Stands in for ``Continue()`` when the review package cannot be imported at all."""

    def __repr__(self) -> str:
        return "Continue()"


def _review_api() -> ModuleType:
    import agentensemble_review

    return agentensemble_review


def is_review_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a ReviewError (a timeout with on_timeout=FAIL, a handler answering
    garbage, ...): the review machinery failed, which stops the run instead of becoming a failed
    tool call. Never imports the review package itself.
    """
    module = sys.modules.get("agentensemble_review")
    error_type = getattr(module, "ReviewError", None)
    return isinstance(error_type, type) and isinstance(exc, error_type)


def review_setting(rule: object) -> Any | None:
    """``rule`` if it is a ``Review`` (a tool's own approval settings), else None. Never imports
    the review package: a Review instance exists only if it was imported already."""
    module = sys.modules.get("agentensemble_review")
    review_type = getattr(module, "Review", None)
    if isinstance(review_type, type) and isinstance(rule, review_type):
        return rule
    return None


RUN_STOPPED = "the run stopped before this review was answered"


def _unless_stopped(api: ModuleType, context: ToolContext, decision: Any) -> Any:
    """A decision that arrives after the run stopped approves nothing."""
    if context.stopped.is_set():
        return api.ExitEarly(RUN_STOPPED)
    return decision


def _require_handler(context: ToolContext, tool_name: str) -> Any:
    if context.review_handler is None:
        raise ConfigurationError(
            f"Tool '{tool_name}' requires approval but no review handler is configured; "
            "pass review_handler= to the Ensemble (e.g. ConsoleReviewHandler())"
        )
    return context.review_handler


def _request(
    api: ModuleType,
    context: ToolContext,
    *,
    tool_name: str,
    output: str,
    prompt: str,
    timeout: timedelta | float | None = None,
    on_timeout: Any = None,
) -> Any:
    fields: dict[str, Any] = {
        "timing": api.ReviewTiming.DURING_EXECUTION,
        "task_description": context.task_description,
        "output": output,
        "prompt": prompt,
        "tool_name": tool_name,
    }
    if timeout is not None:
        fields["timeout"] = (
            timeout if isinstance(timeout, timedelta) else timedelta(seconds=timeout)
        )
    if on_timeout is not None:
        fields["on_timeout"] = on_timeout
    key = step_key()
    if key is not None:  # a durable run's tool step: the same id when a recovery re-runs it
        fields["id"] = key
    return api.ReviewRequest(**fields)


def _announce(context: ToolContext, request: Any) -> None:
    context.emit_event(
        ReviewRequested(
            timing=request.timing.value,
            task_description=request.task_description,
            tool_name=request.tool_name,
            output=request.output,
            prompt=request.prompt,
        )
    )


def _report(context: ToolContext, request: Any, decision: Any) -> Any:
    details = {
        key: getattr(decision, key)
        for key in ("revised_output", "reason", "timed_out")
        if hasattr(decision, key)
    }
    context.emit_event(
        ReviewDecided(
            timing=request.timing.value,
            task_description=request.task_description,
            decision=str(getattr(decision, "decision", type(decision).__name__)),
            tool_name=request.tool_name,
            details=details,
            decided_by=getattr(decision, "decided_by", None)
            or type(context.review_handler).__name__,
        )
    )
    return decision


def _ask_sync(api: ModuleType, handler: Any, request: Any, context: ToolContext) -> Any:
    """Ask from sync code; from a worker thread an async handler runs on the agent's loop."""
    _announce(context, request)
    loop = context.loop
    if loop is not None and loop.is_running() and not _runs_in(loop):
        decision = _report(context, request, api.ask(handler, request, loop=loop))
    else:
        decision = _report(context, request, api.ask(handler, request))
    return _unless_stopped(api, context, decision)


async def _ask_async(api: ModuleType, handler: Any, request: Any, context: ToolContext) -> Any:
    _announce(context, request)
    decision = _report(context, request, await api.aask(handler, request))
    return _unless_stopped(api, context, decision)


def _runs_in(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _verdict(api: ModuleType, decision: Any, tool_input: str) -> Verdict:
    if isinstance(decision, api.ExitEarly):
        return Verdict(approved=False, input=tool_input, reason=decision.reason)
    if isinstance(decision, api.Edit):
        return Verdict(approved=True, input=decision.revised_output)
    return Verdict(approved=True, input=tool_input)


def _refused(exc: Any, tool_input: str) -> Verdict:
    """The service refused the request for what the model put in it (HTTP 400/413/422): the
    model's problem, so that call fails and the run goes on. Nothing is approved."""
    if getattr(exc, "status_code", None) == 413:
        size = len(tool_input.encode("utf-8", "surrogatepass"))
        problem = f"the tool input is too large ({size} bytes)"
    else:
        problem = str(getattr(exc, "problem", "the request was refused"))
    return Verdict(approved=False, input=tool_input, refusal=problem)


def _approval_prompt(tool_name: str) -> str:
    return f"Approve this call to tool '{tool_name}'? The output shown is the tool's input."


async def aask_reviewer(request: Any) -> Any:
    """Ask the run's reviewer about a request a tool built itself (e.g. a question for the
    human), with the same events as an approval. ConfigurationError when no handler is set."""
    context = current_tool_context()
    handler = _require_handler(context, str(request.tool_name or "tool"))
    key = step_key()
    if key is not None:  # in a durable run's step: a recovery asks about the same review again
        request = request.model_copy(update={"id": key})
    return await _ask_async(_review_api(), handler, request, context)


def _approval_request(
    api: ModuleType, context: ToolContext, tool_name: str, tool_input: str, setting: Any
) -> Any:
    """The request for one call; a tool's own ``Review`` sets its prompt, timeout, on_timeout."""
    if setting is None:
        return _request(
            api, context, tool_name=tool_name, output=tool_input, prompt=_approval_prompt(tool_name)
        )
    return _request(
        api,
        context,
        tool_name=tool_name,
        output=tool_input,
        prompt=setting.prompt or _approval_prompt(tool_name),
        timeout=setting.timeout,
        on_timeout=setting.on_timeout,
    )


async def areview_tool_input(tool_name: str, tool_input: str, setting: Any = None) -> Verdict:
    """Ask the current handler whether the tool may run on ``tool_input`` (DURING_EXECUTION).

    ``setting`` is the tool's own ``Review`` (None: the defaults). Raises ConfigurationError
    when no handler is configured.
    """
    context = current_tool_context()
    handler = _require_handler(context, tool_name)
    api = _review_api()
    request = _approval_request(api, context, tool_name, tool_input, setting)
    try:
        decision = await _ask_async(api, handler, request, context)
    except api.ReviewRequestRefusedError as exc:
        return _refused(exc, tool_input)
    return _verdict(api, decision, tool_input)


def review_tool_input(tool_name: str, tool_input: str, setting: Any = None) -> Verdict:
    """Sync twin of ``areview_tool_input`` (for the sync ``execute`` path)."""
    context = current_tool_context()
    handler = _require_handler(context, tool_name)
    api = _review_api()
    request = _approval_request(api, context, tool_name, tool_input, setting)
    try:
        decision = _ask_sync(api, handler, request, context)
    except api.ReviewRequestRefusedError as exc:
        return _refused(exc, tool_input)
    return _verdict(api, decision, tool_input)


def _auto_approved() -> Any:
    try:
        return _review_api().Continue()
    except ImportError:
        return _AutoApproved()


def _ad_hoc_prompt(tool_name: str) -> str:
    return f"Tool '{tool_name}' asks for approval of the action shown."


def _ad_hoc_request(
    tool_name: str,
    description: str,
    timeout: timedelta | float | None,
    on_timeout: Any,
    prompt: str | None = None,
) -> tuple[ModuleType, ToolContext, Any] | None:
    """The request for a tool's own check, or None when no handler is configured."""
    context = current_tool_context()
    if context.review_handler is None:
        return None
    api = _review_api()
    request = _request(
        api,
        context,
        tool_name=tool_name,
        output=description,
        prompt=prompt or _ad_hoc_prompt(tool_name),
        timeout=timeout,
        on_timeout=on_timeout,
    )
    return api, context, request


def request_approval(
    tool_name: str,
    description: str,
    timeout: timedelta | float | None = None,
    on_timeout: Any = None,
) -> Any:
    """A tool's own mid-execution check; auto-approves (a ``Continue``) with no handler."""
    asked = _ad_hoc_request(tool_name, description, timeout, on_timeout)
    if asked is None:
        return _auto_approved()
    api, context, request = asked
    return _ask_sync(api, context.review_handler, request, context)


async def arequest_approval(
    tool_name: str,
    description: str,
    timeout: timedelta | float | None = None,
    on_timeout: Any = None,
    prompt: str | None = None,
) -> Any:
    """Async twin of ``request_approval``; ``prompt``: what the reviewer is asked (None: the
    default approval question)."""
    asked = _ad_hoc_request(tool_name, description, timeout, on_timeout, prompt)
    if asked is None:
        return _auto_approved()
    api, context, request = asked
    return await _ask_async(api, context.review_handler, request, context)
