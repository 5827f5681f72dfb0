"""Run budgets: ``UsageLimits`` and the one counter a run keeps against them.

A run binds one ``UsageMeter`` in a context variable (as ``run_context`` binds the run id), so
every task, delegation, loop iteration, ``for_each`` item and parallel branch of the run, and a
nested ensemble run from a tool, count on the same meter: asyncio tasks and worker threads
inherit it. A nested run with limits of its own counts on its own meter and its parent's.

The executor asks twice per model call and once per tool call: ``before_model_call`` (counts
the call and estimates the request's prompt with litellm's offline token counter when a limit is
on tokens or cost; raises ``UsageLimitExceeded`` when the call would pass a limit, so it is never
made), ``after_model_call`` (adds what the provider reported) and ``before_tool_call``. These
calls sit outside a durable run's steps, so a resumed run counts its checkpointed calls again
and finds the counts it had. With no limits bound each is one context-variable read.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator

from agentensemble.errors import ConfigurationError, TaskExecutionError, UsageLimitExceeded
from agentensemble.outputs import TokenUsage


class UsageLimits(BaseModel):
    """What one run may use at most: ``UsageLimits(model_calls=20, cost_usd=0.50)``.

    Every field is optional (None: no limit). Counted across the whole run: every task,
    delegation, nested ensemble, loop iteration, ``for_each`` item and parallel branch, and
    across a durable resume. Checked before each model and tool call.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    model_calls: StrictInt | None = Field(default=None, gt=0, description="model requests")
    tool_calls: StrictInt | None = Field(
        default=None, ge=0, description="tool calls (0: the run may call no tool)"
    )
    input_tokens: StrictInt | None = Field(default=None, gt=0, description="prompt tokens")
    output_tokens: StrictInt | None = Field(default=None, gt=0, description="completion tokens")
    total_tokens: StrictInt | None = Field(default=None, gt=0, description="prompt + completion")
    cost_usd: float | None = Field(
        default=None, gt=0, description="USD at litellm's bundled prices"
    )

    @field_validator("cost_usd", mode="before")
    @classmethod
    def _a_number(cls, value: Any) -> Any:
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise ValueError(f"cost_usd must be a positive number of dollars; got {value!r}")
        return value

    @property
    def counts_tokens(self) -> bool:
        """Whether a model call's prompt must be estimated before it is sent."""
        return (
            self.input_tokens is not None
            or self.total_tokens is not None
            or self.cost_usd is not None
        )


class UsageMeter:
    """One run's counts, checked against its limits and its parent run's (a nested run)."""

    def __init__(self, limits: UsageLimits, parent: UsageMeter | None = None) -> None:
        self.limits = limits
        self.parent = parent
        self.model_calls = 0
        self.tool_calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.total_tokens = 0
        self.cost_usd: float | None = 0.0  # None once a call's cost was unknown
        self._lock = threading.Lock()  # tool calls and nested runs count from worker threads
        self.meters: tuple[UsageMeter, ...] = (self, *(parent.meters if parent else ()))
        """This meter, then each enclosing run's."""
        self.counts_tokens = any(meter.limits.counts_tokens for meter in self.meters)
        """Whether any meter of the chain limits tokens or cost (a prompt is then estimated)."""

    def reserve_model_call(self, prompt_tokens: int, prompt_cost: float | None) -> None:
        """Count one model call whose prompt is about ``prompt_tokens`` (0: not estimated);
        raise ``UsageLimitExceeded`` instead when it would pass a limit of any run."""
        meters = self.meters
        for meter in meters:
            with meter._lock:
                meter._check_model_call(prompt_tokens, prompt_cost)
        for meter in meters:
            with meter._lock:
                meter.model_calls += 1

    def _check_model_call(self, prompt_tokens: int, prompt_cost: float | None) -> None:
        limits = self.limits
        if limits.model_calls is not None and self.model_calls + 1 > limits.model_calls:
            raise UsageLimitExceeded(
                "model_calls", used=self.model_calls, allowed=limits.model_calls
            )
        estimate = f"the next prompt is about {prompt_tokens} tokens"
        if (
            limits.input_tokens is not None
            and self.input_tokens + prompt_tokens > limits.input_tokens
        ):
            raise UsageLimitExceeded(
                "input_tokens", used=self.input_tokens, allowed=limits.input_tokens, detail=estimate
            )
        if (
            limits.total_tokens is not None
            and self.total_tokens + prompt_tokens > limits.total_tokens
        ):
            raise UsageLimitExceeded(
                "total_tokens", used=self.total_tokens, allowed=limits.total_tokens, detail=estimate
            )
        if limits.output_tokens is not None and self.output_tokens >= limits.output_tokens:
            raise UsageLimitExceeded(
                "output_tokens", used=self.output_tokens, allowed=limits.output_tokens
            )
        if limits.cost_usd is not None:
            if self.cost_usd is None:
                raise UsageLimitExceeded(
                    "cost_usd",
                    used=None,
                    allowed=limits.cost_usd,
                    detail="a call's price was unknown",
                )
            if self.cost_usd + (prompt_cost or 0.0) > limits.cost_usd:
                detail = f"the next prompt costs about ${prompt_cost or 0.0:.6f}"
                raise UsageLimitExceeded(
                    "cost_usd", used=self.cost_usd, allowed=limits.cost_usd, detail=detail
                )

    def add_usage(self, usage: TokenUsage, cost: float | None) -> None:
        """Add a model call's reported usage and cost (None: unknown) to every run's counts."""
        for meter in self.meters:
            with meter._lock:
                meter.input_tokens += usage.prompt_tokens
                meter.output_tokens += usage.completion_tokens
                meter.total_tokens += usage.total_tokens
                if meter.cost_usd is not None:
                    meter.cost_usd = None if cost is None else meter.cost_usd + cost

    def reserve_tool_call(self, name: str) -> None:
        """Count one call of tool ``name``, or raise ``UsageLimitExceeded`` instead."""
        meters = self.meters
        for meter in meters:
            allowed = meter.limits.tool_calls
            with meter._lock:
                if allowed is not None and meter.tool_calls + 1 > allowed:
                    raise UsageLimitExceeded(
                        "tool_calls",
                        used=meter.tool_calls,
                        allowed=allowed,
                        detail=f"a call of {name!r}",
                    )
        for meter in meters:
            with meter._lock:
                meter.tool_calls += 1


def check_limits(value: object, field: str) -> UsageLimits:
    """``value`` if it is a ``UsageLimits``; else ConfigurationError naming ``field``."""
    if not isinstance(value, UsageLimits):
        raise ConfigurationError(
            f"{field} must be a UsageLimits, such as UsageLimits(model_calls=20); "
            f"got {type(value).__name__}"
        )
    return value


_meter: ContextVar[UsageMeter | None] = ContextVar("agentensemble_usage_meter", default=None)


def current_meter() -> UsageMeter | None:
    """The meter of the run this code belongs to, or None when no run in it has limits."""
    return _meter.get()


@contextmanager
def metered(limits: UsageLimits | None) -> Iterator[UsageMeter | None]:
    """Count the block on a fresh meter for ``limits`` (inside the enclosing run's, if any);
    with None, the block counts on the enclosing run's meter, if any."""
    parent = _meter.get()
    if limits is None:
        yield parent
        return
    meter = UsageMeter(limits, parent)
    token = _meter.set(meter)
    try:
        yield meter
    finally:
        _meter.reset(token)


async def before_model_call(
    model: object, messages: Sequence[Any], tools: Sequence[Any] | None
) -> None:
    """Count the call of ``model`` about to be made, or raise ``UsageLimitExceeded`` (the call
    is then not made). Estimates the prompt only when a limit is on tokens or cost."""
    meter = _meter.get()
    if meter is None:
        return
    prompt_tokens, prompt_cost = 0, None
    if meter.counts_tokens:
        from agentensemble.llm._chain import first_name

        model_name = first_name(model)
        prompt_tokens = await prompt_size(model_name, messages, tools)
        prompt_cost = _input_cost(prompt_tokens, model_name)
    meter.reserve_model_call(prompt_tokens, prompt_cost)


def after_model_call(usage: TokenUsage, cost: float | None) -> None:
    """Add a finished model call's usage and cost to the run's counts."""
    meter = _meter.get()
    if meter is not None:
        meter.add_usage(usage, cost)


def before_tool_call(name: str) -> None:
    """Count the tool call about to start, or raise ``UsageLimitExceeded`` (it never runs)."""
    meter = _meter.get()
    if meter is not None:
        meter.reserve_tool_call(name)


async def prompt_size(model_name: str, messages: Sequence[Any], tools: Sequence[Any] | None) -> int:
    """The prompt's tokens as litellm's offline counter counts them (the model's tokenizer
    where litellm bundles it); a character estimate if the counter fails."""
    from agentensemble.llm._litellm import is_loaded, load_litellm

    litellm = load_litellm() if is_loaded() else await asyncio.to_thread(load_litellm)
    try:
        counted = litellm.token_counter(
            model=model_name, messages=list(messages), tools=list(tools) if tools else None
        )
    except Exception:  # an unknown content shape: about four characters a token
        return sum(len(str(message.get("content") or "")) for message in messages) // 4 + 1
    return int(counted) if isinstance(counted, int) else 0


def _input_cost(prompt_tokens: int, model_name: str) -> float | None:
    from agentensemble.llm.cost import cost_usd

    usage = TokenUsage(prompt_tokens=prompt_tokens, completion_tokens=0, total_tokens=prompt_tokens)
    return cost_usd(usage, model_name)


def check_prices(limits: UsageLimits | None, models: Iterable[object]) -> None:
    """Fail closed before a run: a ``cost_usd`` limit needs every model's price. Raises
    ``ConfigurationError`` naming each model litellm's price table does not know."""
    if limits is None or limits.cost_usd is None:
        return
    from agentensemble.llm.cost import cost_usd
    from agentensemble.llm.fallback import chain_models
    from agentensemble.llm.types import model_label

    one = TokenUsage(prompt_tokens=1, completion_tokens=1, total_tokens=2)
    unknown: list[str] = []
    for model in models:
        if model is None:
            continue
        for part in chain_models(model):
            name = part if isinstance(part, str) else model_label(part)
            if cost_usd(one, name) is None and name not in unknown:
                unknown.append(name)
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise ConfigurationError(
            f"limits.cost_usd needs each model's price, and litellm's price table has none for "
            f"{names}: register it (litellm.register_model) or limit tokens instead"
        )


def limit_error(error: BaseException) -> UsageLimitExceeded | None:
    """The ``UsageLimitExceeded`` a failed run's error was caused by, holding the run's
    completed outputs and trace; None when a limit did not stop it."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, UsageLimitExceeded):
            if isinstance(error, TaskExecutionError):
                cause.completed_outputs = list(error.completed_outputs)
                cause.trace = error.trace
            return cause
        cause = cause.__cause__
    return None


__all__ = [
    "UsageLimits",
    "UsageMeter",
    "after_model_call",
    "before_model_call",
    "before_tool_call",
    "check_limits",
    "check_prices",
    "current_meter",
    "limit_error",
    "metered",
    "prompt_size",
]
