"""The approval gate for every tool shape, and the note of what a call finally ran with.

Instrumented tools (AbstractAgentTool, TypedAgentTool, ``@tool`` functions, pipelines) pass
the gate from their own ``execute``; a plain ``AgentTool`` subclass has no such ``execute``, so
the resolver's ``ExecutableTool`` and the pipeline's step runner pass it for them. Whatever the
shape, a tool that declares ``requires_approval`` is asked about before its body runs, and the
reviewer is shown exactly the input the body will receive.

``requires_approval`` is ``True``, a callable ``(shown input) -> bool``, or an
``agentensemble_review.Review`` (``Review.required(timeout=..., on_timeout=...)``: approval with
that tool's own deadline; ``Review.skip()``: none).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import Any, cast

from pydantic import BaseModel

from agentensemble._base.dataclass import dataclass
from agentensemble.errors import ConfigurationError, ToolArgumentsError
from agentensemble.steps import as_step
from agentensemble.tools import _approval
from agentensemble.tools._calls import run_policed
from agentensemble.tools.base import ToolResult, as_tool_result
from agentensemble.tools.schema import DuplicateKeyError, load_arguments_json, loads_unique

EDIT_INVALID = "The reviewer's edited input is invalid, so the tool did not run"


def review_setting(rule: object) -> Any | None:
    """``rule`` if it is a ``Review`` (per-tool prompt, timeout, on_timeout), else None."""
    return _approval.review_setting(rule)


def check_rule(rule: object, owner: str) -> None:
    """Refuse a ``requires_approval`` value that cannot mean anything (say the Review class).

    A class is callable, so it would pass as a conditional rule and fail on every call.
    """
    if isinstance(rule, type):
        raise ConfigurationError(
            f"{owner}: requires_approval got the class {rule.__name__}; pass True, a callable "
            "rule (input) -> bool, or an instance such as Review.required(timeout=...)"
        )
    if rule is None or review_setting(rule) is not None or callable(rule):
        return
    if not isinstance(rule, (bool, int)):
        raise ConfigurationError(
            f"{owner}: requires_approval must be True/False, a callable rule (input) -> bool "
            f"or Review.required(...); got {type(rule).__name__}"
        )


def declares_approval(rule: object) -> bool:
    """Whether a ``requires_approval`` value may ever ask (so a review handler is needed)."""
    setting = review_setting(rule)
    if setting is not None:
        return bool(setting.enabled)
    return callable(rule) or bool(rule)


def asks(rule: object, shown: str) -> bool:
    """Whether this call must be approved: a conditional rule reads the input as shown."""
    setting = review_setting(rule)
    if setting is not None:
        return bool(setting.enabled)
    if callable(rule):
        return bool(rule(shown))
    return bool(rule)


def canonical_arguments(arguments: BaseModel) -> str:
    """Validated arguments as compact JSON text, keys as the model sends them (aliases), defaults
    filled in: what the reviewer reads is what the tool gets."""
    return json.dumps(arguments.model_dump(mode="json", by_alias=True), ensure_ascii=False)


def canonical_json(text: str, name: str) -> str:
    """``text`` re-serialised when it is JSON, else as it is; ToolArgumentsError when an object
    in it names a key twice (the reviewer and the tool would each read another value)."""
    try:
        value = loads_unique(text)
    except DuplicateKeyError as exc:
        raise ToolArgumentsError(
            f"Invalid arguments for '{name}': duplicate key {exc.key!r} in a JSON object; "
            "send each argument once."
        ) from exc
    except ValueError:  # not JSON, or too large/deep to be arguments: shown as it is
        return text
    return json.dumps(value, ensure_ascii=False)


# -- what the call ran with (ToolCallRecord.arguments) ---------------------------------------


@dataclass(slots=True)
class ToolCallResult:
    """How one call through ``ExecutableTool.call`` ended: the result, and the arguments the
    tool ran with when a reviewer's edit changed them (None: as the model sent them)."""

    result: ToolResult
    ran_with: str | None = None


@dataclass
class RanWith:
    """The input a call's own gate ran the tool with after a reviewer's edit (None: unchanged)."""

    input: str | None = None


_ran_with: ContextVar[RanWith | None] = ContextVar("agentensemble_ran_with", default=None)


class _RanWithSlot:
    """Sets the ``_ran_with`` slot for a block (a class, not a generator: entered twice on
    every tool call)."""

    __slots__ = ("_slot", "_token")

    def __init__(self, slot: RanWith | None) -> None:
        self._slot = slot

    def __enter__(self) -> RanWith | None:
        self._token = _ran_with.set(self._slot)
        return self._slot

    def __exit__(self, *_: object) -> None:
        _ran_with.reset(self._token)


def recording() -> AbstractContextManager[RanWith]:
    """Collect the edited input of the call about to run (one slot per top-level call)."""
    return cast("AbstractContextManager[RanWith]", _RanWithSlot(RanWith()))


def detached() -> AbstractContextManager[None]:
    """Run a tool's body or a pipeline step: their own gates must not rewrite the call's note."""
    return cast("AbstractContextManager[None]", _RanWithSlot(None))


def note_ran_with(text: str) -> None:
    """Remember that the call runs on ``text`` (a reviewer's edit), for its record."""
    slot = _ran_with.get()
    if slot is not None:
        slot.input = text


async def run_body(
    name: str, tool: object, body: Callable[..., Awaitable[ToolResult]], *args: Any
) -> ToolResult:
    """Run a tool's body, ``body(*args)``, once its gate let it through, detached from the
    call's note.

    In a durable run whose approval was asked in the run itself (not inside a step), the body
    is a step of its own, checkpointed; inside a step, or in a plain run, a plain call. A tool
    whose body makes steps of its own (``durable_itself``: a delegation) is never one step.
    The call's policy (timeout, retries, bodies at once: ``_calls.run_policed``) governs the
    body only, inside that step: a timed-out body's failure is checkpointed like any result.
    """
    with detached():
        return await as_step(
            "tool",
            f"tool:{name}",
            run_policed,
            body,
            *args,
            durable_itself=getattr(tool, "durable_itself", False) is True,
        )


async def run_plain(tool: Any, tool_input: str) -> ToolResult:
    """The ToolResult of a plain tool's ``aexecute`` on ``tool_input`` (text or a ToolResult)."""
    return as_tool_result(await tool.aexecute(tool_input))


# -- the gate for plain AgentTools ---------------------------------------------------------


async def agate_plain(
    name: str, rule: object, tool_input: str, *, takes_arguments: bool
) -> str | ToolResult:
    """Ask about a call to a plain (not instrumented) AgentTool when it declares approval.

    Returns the input to run the tool with (the shown text, or a reviewer's valid edit), or the
    failure result of a rejected call. A tool that takes JSON arguments receives them
    re-serialised, exactly as shown; an edit to them must be JSON with each key once.
    """
    if not declares_approval(rule):
        return tool_input
    shown = canonical_json(tool_input, name) if takes_arguments else tool_input
    if not asks(rule, shown):
        return shown
    verdict = await _approval.areview_tool_input(name, shown, setting=review_setting(rule))
    if not verdict.approved:
        return ToolResult.failure(verdict.rejection_message)
    if verdict.input == shown:
        return shown
    edited = verdict.input
    if takes_arguments:
        try:
            load_arguments_json(edited, f"Invalid arguments for '{name}'", "")
        except ToolArgumentsError as exc:
            raise ToolArgumentsError(f"{EDIT_INVALID}: {exc}") from exc
    note_ran_with(edited)
    return edited


__all__ = [
    "EDIT_INVALID",
    "RanWith",
    "ToolCallResult",
    "agate_plain",
    "asks",
    "canonical_arguments",
    "canonical_json",
    "check_rule",
    "declares_approval",
    "detached",
    "note_ran_with",
    "recording",
    "review_setting",
    "run_body",
    "run_plain",
]
