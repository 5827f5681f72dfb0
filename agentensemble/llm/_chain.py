"""One model turn down a chain of models: when one fails in a way the chain names, the next
answers the same turn.

The rule (``fallback_on``) is data: a tuple of exception types, or a predicate. The default,
``provider_unavailable``, names what another provider can fix: a rate limit still hit after the
model's own retries, an outage status (5xx, 529 overloaded, 408), a timeout, a refused or dropped
connection. A bad request, a refusal, a missing key or a context-length error would fail on any
model the same way, or must not be hidden; they never fall back by default.

Below ``LLM`` (which runs its ``fallbacks=`` through here) and ``FallbackModel``: neither is
imported here.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from agentensemble.errors import AllModelsFailedError, ConfigurationError, LLMError
from agentensemble.llm._failures import classify
from agentensemble.llm.streaming import DeltaSink, current_sink, use_sink
from agentensemble.llm.types import ChatModel, ChatResponse, Message, ToolSpec, model_label
from agentensemble.logging import get_logger

#: A fallback rule: the exception types that hand the turn on, or a predicate deciding it.
FallbackRule = tuple[type[BaseException], ...] | Callable[[BaseException], bool]

#: Received statuses another provider may not share: timeout, rate limit, outages, overloaded.
OUTAGE_STATUS = frozenset({408, 429, 500, 502, 503, 504, 529})

#: Errors a fallback must never hide, by name (``ModelRefusalError`` lives in errors.py once the
#: real-models branch lands; named here so the rule holds either way).
NEVER_BY_DEFAULT = frozenset({"ModelRefusalError", "UsageLimitExceeded"})

_log = get_logger()


def provider_unavailable(error: BaseException) -> bool:
    """The default rule: True for a failure another model may not have (rate limited after
    retries, an outage status, a timeout, a connection error); False for a bad request, a
    refusal, bad settings and anything unknown."""
    if type(error).__name__ in NEVER_BY_DEFAULT or isinstance(error, ConfigurationError):
        return False
    if isinstance(error, LLMError):
        if error.status_code is not None:
            return error.status_code in OUTAGE_STATUS
        cause = error.__cause__
        return cause is not None and classify(cause).retryable
    return isinstance(error, (TimeoutError, asyncio.TimeoutError, ConnectionError))


def falls_back(rule: FallbackRule, error: BaseException) -> bool:
    """Whether ``rule`` hands the turn that failed with ``error`` to the next model."""
    if isinstance(rule, tuple):
        return isinstance(error, rule)
    return bool(rule(error))


def check_rule(rule: Any, field: str) -> FallbackRule:
    """``rule`` if it is a tuple of exception classes or a callable; else ValueError naming
    ``field``."""
    if isinstance(rule, tuple):
        bad = [
            item
            for item in rule
            if not (isinstance(item, type) and issubclass(item, BaseException))
        ]
        if bad or not rule:
            raise ValueError(
                f"{field} must be a non-empty tuple of exception classes or a function "
                f"(error) -> bool; got {rule!r}"
            )
        return rule
    if isinstance(rule, type) or not callable(rule):
        raise ValueError(
            f"{field} must be a tuple of exception classes or a function (error) -> bool; "
            f"got {type(rule).__name__ if not isinstance(rule, type) else rule.__name__}"
        )
    return rule  # type: ignore[no-any-return]


class _ShownText:
    """A sink in front of the run's own: notes whether this model showed any text."""

    __slots__ = ("shown", "sink")

    def __init__(self, sink: DeltaSink) -> None:
        self.sink = sink
        self.shown = False

    def text(self, piece: str) -> None:
        self.shown = True
        self.sink.text(piece)

    def restarted(self, attempt: int) -> None:
        self.sink.restarted(attempt)


async def complete_down(
    chain: Sequence[tuple[str, ChatModel]],
    messages: Sequence[Message],
    tools: Sequence[ToolSpec] | None,
    options: dict[str, Any],
    rule: FallbackRule,
) -> ChatResponse:
    """Ask each ``(name, model)`` of ``chain`` in turn until one answers; its answer carries
    its name in ``ChatResponse.model`` (which model answered, for events, trace and cost).

    A failure ``rule`` does not name goes on at once, as it is. When every model failed the
    rule's way, one ``AllModelsFailedError`` lists each model's failure. A streaming model that
    already showed text and failed is followed by ``StreamRestarted`` before the next one.
    """
    sink = current_sink()
    failures: list[tuple[str, BaseException]] = []
    attempts = 0
    for name, model in chain:
        shown = _ShownText(sink) if sink is not None else None
        try:
            if shown is not None:
                with use_sink(shown):
                    response = await model.complete(messages, tools=tools, **options)
            else:
                response = await model.complete(messages, tools=tools, **options)
        except Exception as error:
            if not falls_back(rule, error):
                raise
            failures.append((name, error))
            attempts += getattr(error, "attempts", 1) or 1
            if len(failures) == len(chain):
                raise AllModelsFailedError(failures) from error
            _log.warning(
                "llm_fallback",
                failed=name,
                next=chain[len(failures)][0],
                error_type=type(error).__name__,
                status_code=getattr(error, "status_code", None),
            )
            if shown is not None and shown.shown and sink is not None:
                sink.restarted(attempts + 1)
            continue
        total = attempts + response.attempts
        if response.model == name and response.attempts == total:
            return response
        return dataclasses.replace(response, model=name, attempts=total)
    raise ValueError("a fallback chain needs at least one model")


def answered_by(model: object, response: ChatResponse, label: str) -> str:
    """Which model answered a turn of ``model``: for a chain (a FallbackModel, an LLM with
    ``fallbacks``) the name its answer carries; else ``label``. Duck-typed: neither class is
    imported (a run on another ChatModel never loads them)."""
    if getattr(model, "fallbacks", None) and isinstance(response.model, str) and response.model:
        return response.model
    return label


def first_name(model: object) -> str:
    """The name of the model a turn of ``model`` goes to first (a chain's first model)."""
    if getattr(model, "fallbacks", None):
        chain = model.fallback_chain()  # type: ignore[attr-defined]
        return str(chain[0][0])
    return model_label(model)


__all__ = [
    "NEVER_BY_DEFAULT",
    "OUTAGE_STATUS",
    "FallbackRule",
    "answered_by",
    "check_rule",
    "complete_down",
    "falls_back",
    "first_name",
    "provider_unavailable",
]
