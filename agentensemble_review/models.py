"""The review vocabulary: when a review happens, what is asked, what a human can answer.

All models are frozen pydantic models (they cross the public edge: handlers, webhooks, events).
The enums are ``str`` enums, so the core can compare ``policy.value == "never"`` without importing
this package.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from enum import Enum
from typing import Annotated, Any, Literal, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from agentensemble_review._format import format_duration

DEFAULT_REVIEW_TIMEOUT = timedelta(minutes=5)
"""How long a review waits for a human unless told otherwise."""


class ReviewTiming(str, Enum):
    """The moment of a review: before a task, during a tool call, or after a task."""

    BEFORE_EXECUTION = "before_execution"
    DURING_EXECUTION = "during_execution"
    AFTER_EXECUTION = "after_execution"


class OnTimeoutAction(str, Enum):
    """What happens when no decision arrives in time. The default, EXIT_EARLY, fails closed."""

    CONTINUE = "continue"
    EXIT_EARLY = "exit_early"
    FAIL = "fail"


class ReviewPolicy(str, Enum):
    """When the ensemble asks for an after-task review; a task's own ``review`` overrides it."""

    NEVER = "never"
    AFTER_EVERY_TASK = "after_every_task"
    AFTER_LAST_TASK = "after_last_task"


def _check_timeout(value: timedelta) -> timedelta:
    if value < timedelta(0):
        raise ValueError("timeout must be zero (wait forever) or positive")
    return value


_Timeout = Annotated[timedelta, AfterValidator(_check_timeout)]


class ReviewRequest(BaseModel):
    """One question to a human: the thing to look at and how long to wait for an answer.

    ``output`` is the task's output (after execution), the tool's input (during execution) or
    the task's planned work (before execution). ``timeout == timedelta(0)`` waits forever.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    timing: ReviewTiming
    task_description: str = ""
    output: str = ""
    prompt: str | None = None
    tool_name: str | None = None
    timeout: _Timeout = DEFAULT_REVIEW_TIMEOUT
    on_timeout: OnTimeoutAction = OnTimeoutAction.EXIT_EARLY

    @property
    def timeout_seconds(self) -> float | None:
        """The timeout in seconds, or None when the request waits forever."""
        seconds = self.timeout.total_seconds()
        return seconds if seconds > 0 else None

    def describe_timeout(self) -> str:
        """Human text for the timeout, e.g. ``5m`` or ``no time limit``."""
        seconds = self.timeout_seconds
        return "no time limit" if seconds is None else format_duration(seconds)


class _Decision(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    decided_by: str | None = None
    """Who decided, when the channel knows it (the run API's or AG-UI's caller, the web
    console's reviewer): the ``ReviewDecided`` event and the trace record it; without it they
    name the handler. Keyword only: ``Continue(decided_by="ann")``."""

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            if name != "decided_by" or value is not None:  # Continue() stays Continue()
                yield name, value

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Dumped as before when no one is named (``decided_by`` only when known)."""
        data = handler(self)
        if isinstance(data, dict) and data.get("decided_by") is None:
            data.pop("decided_by", None)
        return data


class Continue(_Decision):
    """Approve: the output (or tool input) goes on unchanged."""

    decision: Literal["continue"] = Field(default="continue", repr=False)


class Edit(_Decision):
    """Approve with a change: ``revised_output`` replaces the output (or the tool input)."""

    __match_args__ = ("revised_output",)

    decision: Literal["edit"] = Field(default="edit", repr=False)
    revised_output: str

    def __init__(self, revised_output: str, **data: Any) -> None:
        # BaseModel's own __init__ (``**data``): the type checker sees the fields of _Decision only.
        BaseModel.__init__(self, revised_output=revised_output, **data)


class ExitEarly(_Decision):
    """Stop: the run ends (or the tool call is rejected). ``timed_out`` marks a decision made by
    the ``on_timeout`` rule rather than by a human, so the core can report ``TIMEOUT``."""

    __match_args__ = ("reason",)

    decision: Literal["exit_early"] = Field(default="exit_early", repr=False)
    reason: str | None = None
    timed_out: bool = False

    def __init__(self, reason: str | None = None, *, timed_out: bool = False, **data: Any) -> None:
        BaseModel.__init__(self, reason=reason, timed_out=timed_out, **data)


ReviewDecision = Union[Continue, Edit, ExitEarly]  # noqa: UP007 - a runtime alias, also for isinstance
"""What a human answers: ``Continue() | Edit(revised_output) | ExitEarly(reason)``."""

DECISION_TYPES: tuple[type[Continue], type[Edit], type[ExitEarly]] = (Continue, Edit, ExitEarly)


class Review(BaseModel):
    """A task's own review setting; it overrides the ensemble's ``ReviewPolicy`` for that task.

    Build it with ``Review.required(...)`` or ``Review.skip()``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    prompt: str | None = None
    timeout: _Timeout = DEFAULT_REVIEW_TIMEOUT
    on_timeout: OnTimeoutAction = OnTimeoutAction.EXIT_EARLY

    @classmethod
    def required(
        cls,
        prompt: str | None = None,
        timeout: timedelta | float = DEFAULT_REVIEW_TIMEOUT,
        on_timeout: OnTimeoutAction | str = OnTimeoutAction.EXIT_EARLY,
    ) -> Review:
        """Ask a human. ``timeout`` is a timedelta or seconds; zero waits forever."""
        return cls.model_validate(
            {"enabled": True, "prompt": prompt, "timeout": timeout, "on_timeout": on_timeout}
        )

    @classmethod
    def skip(cls) -> Review:
        """Never ask for this task, whatever the ensemble's policy says."""
        return cls(enabled=False)

    def to_request(
        self,
        *,
        timing: ReviewTiming,
        task_description: str = "",
        output: str = "",
        tool_name: str | None = None,
    ) -> ReviewRequest:
        """The request this setting makes for one task (or tool call)."""
        return ReviewRequest(
            timing=timing,
            task_description=task_description,
            output=output,
            prompt=self.prompt,
            tool_name=tool_name,
            timeout=self.timeout,
            on_timeout=self.on_timeout,
        )


def effective_review(
    policy: ReviewPolicy | str, task_review: Review | None, *, is_last_task: bool
) -> Review | None:
    """The after-task review to run for one task, or None: the task's setting wins over the policy.

    A policy that asks for a review of a task with no setting of its own uses ``Review.required()``.
    """
    if task_review is not None:
        return task_review if task_review.enabled else None
    policy = ReviewPolicy(policy)
    if policy is ReviewPolicy.AFTER_EVERY_TASK or (
        policy is ReviewPolicy.AFTER_LAST_TASK and is_last_task
    ):
        return Review.required()
    return None


__all__ = [
    "DECISION_TYPES",
    "DEFAULT_REVIEW_TIMEOUT",
    "Continue",
    "Edit",
    "ExitEarly",
    "OnTimeoutAction",
    "Review",
    "ReviewDecision",
    "ReviewPolicy",
    "ReviewRequest",
    "ReviewTiming",
    "effective_review",
]
