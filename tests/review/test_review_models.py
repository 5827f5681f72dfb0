"""The review vocabulary: decisions, requests, task-level settings and the policy rule."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from agentensemble.errors import AgentEnsembleError
from agentensemble_review import (
    Continue,
    Edit,
    ExitEarly,
    OnTimeoutAction,
    Review,
    ReviewDecision,
    ReviewPolicy,
    ReviewRequest,
    ReviewTimeoutError,
    ReviewTiming,
    effective_review,
)


def test_decisions_construct_positionally_and_by_keyword() -> None:
    assert Edit("new") == Edit(revised_output="new")
    assert ExitEarly("why") == ExitEarly(reason="why")
    assert ExitEarly() == ExitEarly(reason=None, timed_out=False)
    assert ExitEarly(timed_out=True).timed_out is True
    assert Continue() == Continue()
    assert Continue() != ExitEarly()


def test_decisions_are_frozen_and_strict() -> None:
    edit = Edit("x")
    with pytest.raises(ValidationError):
        edit.revised_output = "y"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        Edit(None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Continue(surprise=1)  # type: ignore[call-arg]


def test_decision_reprs_are_short() -> None:
    assert repr(Continue()) == "Continue()"
    assert repr(Edit("x")) == "Edit(revised_output='x')"
    assert repr(ExitEarly("r")) == "ExitEarly(reason='r', timed_out=False)"


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        (Continue(), "continue"),
        (Edit("text"), "edit:text"),
        (ExitEarly("no"), "exit:no"),
    ],
)
def test_decisions_support_pattern_matching(decision: ReviewDecision, expected: str) -> None:
    match decision:
        case Continue():
            got = "continue"
        case Edit(text):
            got = f"edit:{text}"
        case ExitEarly(reason):
            got = f"exit:{reason}"
    assert got == expected


def test_review_decision_alias_covers_exactly_the_three() -> None:
    for decision in (Continue(), Edit("x"), ExitEarly()):
        assert isinstance(decision, ReviewDecision)  # type: ignore[misc,arg-type]
    assert not isinstance("continue", ReviewDecision)  # type: ignore[misc,arg-type]


def test_request_defaults() -> None:
    request = ReviewRequest(timing=ReviewTiming.AFTER_EXECUTION)
    assert len(request.id) == 36  # a uuid
    assert request.id != ReviewRequest(timing=ReviewTiming.AFTER_EXECUTION).id
    assert request.timeout == timedelta(minutes=5)
    assert request.on_timeout is OnTimeoutAction.EXIT_EARLY
    assert request.prompt is None and request.tool_name is None
    assert request.output == "" and request.task_description == ""
    assert request.timeout_seconds == 300


@pytest.mark.parametrize(
    ("timeout", "seconds", "text"),
    [
        (timedelta(0), None, "no time limit"),
        (0, None, "no time limit"),
        (1.5, 1.5, "1.5s"),
        (timedelta(minutes=5), 300, "5m"),
        (timedelta(seconds=150), 150, "2m 30s"),
        (timedelta(hours=1, minutes=5), 3900, "1h 5m"),
    ],
)
def test_request_timeout_forms(timeout: object, seconds: float | None, text: str) -> None:
    request = ReviewRequest(timing="after_execution", timeout=timeout)  # type: ignore[arg-type]
    assert request.timeout_seconds == seconds
    assert request.describe_timeout() == text


@pytest.mark.parametrize(
    "bad",
    [
        {"timeout": -1},
        {"timing": "sometime"},
        {"on_timeout": "shrug"},
        {"extra_field": 1},
    ],
)
def test_request_rejects_bad_values(bad: dict[str, object]) -> None:
    fields: dict[str, object] = {"timing": "after_execution", **bad}
    with pytest.raises(ValidationError):
        ReviewRequest(**fields)  # type: ignore[arg-type]


def test_enums_are_str_enums_with_stable_values() -> None:
    assert [t.value for t in ReviewTiming] == [
        "before_execution",
        "during_execution",
        "after_execution",
    ]
    assert [a.value for a in OnTimeoutAction] == ["continue", "exit_early", "fail"]
    assert [p.value for p in ReviewPolicy] == ["never", "after_every_task", "after_last_task"]
    assert ReviewPolicy.NEVER == "never"
    assert ReviewPolicy("after_last_task") is ReviewPolicy.AFTER_LAST_TASK


def test_review_required_and_skip() -> None:
    default = Review.required()
    assert default.enabled is True
    assert default.prompt is None
    assert default.timeout == timedelta(minutes=5)
    assert default.on_timeout is OnTimeoutAction.EXIT_EARLY
    custom = Review.required("Check it", timeout=2, on_timeout="fail")
    assert (custom.prompt, custom.timeout, custom.on_timeout) == (
        "Check it",
        timedelta(seconds=2),
        OnTimeoutAction.FAIL,
    )
    assert Review.required(timeout=timedelta(0)).timeout == timedelta(0)
    assert Review.skip().enabled is False
    with pytest.raises(ValidationError):
        Review.required(timeout=-5)


def test_review_to_request_carries_the_settings() -> None:
    review = Review.required("Approve?", timeout=3, on_timeout=OnTimeoutAction.CONTINUE)
    request = review.to_request(
        timing=ReviewTiming.DURING_EXECUTION, task_description="t", output="o", tool_name="rm"
    )
    assert request.prompt == "Approve?"
    assert request.timeout == timedelta(seconds=3)
    assert request.on_timeout is OnTimeoutAction.CONTINUE
    assert (request.task_description, request.output, request.tool_name) == ("t", "o", "rm")


REQUIRED = Review.required("task's own")
SKIP = Review.skip()


@pytest.mark.parametrize(
    ("policy", "task_review", "is_last", "expected"),
    [
        (ReviewPolicy.NEVER, None, False, None),
        (ReviewPolicy.NEVER, None, True, None),
        (ReviewPolicy.NEVER, REQUIRED, False, REQUIRED),
        (ReviewPolicy.AFTER_EVERY_TASK, None, False, Review.required()),
        (ReviewPolicy.AFTER_EVERY_TASK, None, True, Review.required()),
        (ReviewPolicy.AFTER_EVERY_TASK, SKIP, False, None),
        (ReviewPolicy.AFTER_EVERY_TASK, REQUIRED, True, REQUIRED),
        (ReviewPolicy.AFTER_LAST_TASK, None, False, None),
        (ReviewPolicy.AFTER_LAST_TASK, None, True, Review.required()),
        (ReviewPolicy.AFTER_LAST_TASK, SKIP, True, None),
        (ReviewPolicy.AFTER_LAST_TASK, REQUIRED, False, REQUIRED),
        ("after_every_task", None, False, Review.required()),
    ],
)
def test_task_review_overrides_the_policy(
    policy: ReviewPolicy | str, task_review: Review | None, is_last: bool, expected: Review | None
) -> None:
    assert effective_review(policy, task_review, is_last_task=is_last) == expected


def test_review_errors_are_agentensemble_errors() -> None:
    assert issubclass(ReviewTimeoutError, AgentEnsembleError)
