"""Review gates in the sequential workflow: before and after a task, policies and overrides."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from pydantic import BaseModel

from agentensemble import Ensemble, ExitReason, ReviewDecided, Task, TaskExecutionError
from agentensemble.testing import ScriptedChatModel
from agentensemble_review import (
    Continue,
    Edit,
    ExitEarly,
    OnTimeoutAction,
    Review,
    ReviewPolicy,
    ReviewTimeoutError,
    ReviewTiming,
    ScriptedReviewHandler,
)


def echo_tasks(n: int, **first: object) -> list[Task]:
    tasks: list[Task] = []
    for i in range(1, n + 1):
        extra = first if i == 1 else {}
        tasks.append(
            Task(
                description=f"task {i}",
                handler=lambda ctx: (
                    ctx.description + " | " + ",".join(o.raw for o in ctx.context_outputs)
                ),
                context=list(tasks[-1:]),
                **extra,  # type: ignore[arg-type]
            )
        )
    return tasks


@pytest.mark.parametrize(
    ("policy", "asked_after"),
    [
        (ReviewPolicy.NEVER, []),
        (ReviewPolicy.AFTER_EVERY_TASK, ["task 1", "task 2", "task 3"]),
        (ReviewPolicy.AFTER_LAST_TASK, ["task 3"]),
        ("after_last_task", ["task 3"]),
    ],
)
def test_policy_decides_which_tasks_are_reviewed(policy: object, asked_after: list[str]) -> None:
    reviewer = ScriptedReviewHandler([Continue() for _ in asked_after])
    Ensemble(tasks=echo_tasks(3), review_handler=reviewer, review_policy=policy).run()
    assert [r.task_description for r in reviewer.requests] == asked_after
    assert all(r.timing is ReviewTiming.AFTER_EXECUTION for r in reviewer.requests)


def test_task_review_overrides_the_policy() -> None:
    tasks = echo_tasks(2)
    tasks[0].review = Review.skip()
    tasks[1].review = Review.required(prompt="Check the facts")
    reviewer = ScriptedReviewHandler([Continue()])
    Ensemble(tasks=tasks, review_handler=reviewer, review_policy="after_every_task").run()
    (request,) = reviewer.requests
    assert request.task_description == "task 2"
    assert request.prompt == "Check the facts"


def test_edit_replaces_the_output_for_everything_downstream() -> None:
    reviewer = ScriptedReviewHandler([Edit("EDITED"), Continue(), Continue()])
    result = Ensemble(
        tasks=echo_tasks(3), review_handler=reviewer, review_policy="after_every_task"
    ).run()
    assert result.task_outputs[0].raw == "EDITED"
    assert result.task_outputs[1].raw == "task 2 | EDITED"
    assert reviewer.requests[0].output == "task 1 | "


def test_exit_early_after_a_task_keeps_its_output() -> None:
    reviewer = ScriptedReviewHandler([Continue(), ExitEarly("stop here")])
    result = Ensemble(
        tasks=echo_tasks(3), review_handler=reviewer, review_policy="after_every_task"
    ).run()
    assert result.exit_reason is ExitReason.USER_EXIT_EARLY
    assert [o.raw for o in result.task_outputs] == ["task 1 | ", "task 2 | task 1 | "]


def test_exit_early_before_a_task_skips_it_and_stops() -> None:
    tasks = echo_tasks(3)
    tasks[1].before_review = Review.required()
    reviewer = ScriptedReviewHandler([ExitEarly()])
    result = Ensemble(tasks=tasks, review_handler=reviewer).run()
    assert result.exit_reason is ExitReason.USER_EXIT_EARLY
    assert [o.raw for o in result.task_outputs] == ["task 1 | "]
    assert reviewer.requests[0].timing is ReviewTiming.BEFORE_EXECUTION
    assert reviewer.requests[0].output == "task 2"


def test_edit_before_a_task_revises_what_the_agent_is_asked() -> None:
    model = ScriptedChatModel(["done"])
    task = Task(description="Write about cats", before_review=Review.required())
    reviewer = ScriptedReviewHandler([Edit("Write about dogs")])
    result = Ensemble(tasks=[task], llm=model, review_handler=reviewer).run()
    assert "## Task\nWrite about dogs" in model.requests[0].last_user_content
    assert result.task_outputs[0].task_description == "Write about dogs"


class SlowReviewer:
    def review(self, request: object) -> Continue:
        time.sleep(30)  # far past every timeout below; the thread is left behind, never joined
        return Continue()


@pytest.mark.parametrize(
    ("on_timeout", "expected"),
    [
        (OnTimeoutAction.EXIT_EARLY, ExitReason.TIMEOUT),
        (OnTimeoutAction.CONTINUE, ExitReason.COMPLETED),
    ],
)
def test_a_review_timeout_applies_on_timeout(
    on_timeout: OnTimeoutAction, expected: ExitReason
) -> None:
    tasks = echo_tasks(2)
    tasks[0].review = Review.required(timeout=timedelta(seconds=0.2), on_timeout=on_timeout)
    result = Ensemble(tasks=tasks, review_handler=SlowReviewer()).run()
    assert result.exit_reason is expected
    assert len(result.task_outputs) == (2 if expected is ExitReason.COMPLETED else 1)


def test_on_timeout_fail_raises_holding_completed_outputs() -> None:
    tasks = echo_tasks(2)
    tasks[1].review = Review.required(
        timeout=timedelta(seconds=0.2), on_timeout=OnTimeoutAction.FAIL
    )
    with pytest.raises(TaskExecutionError) as info:
        Ensemble(tasks=tasks, review_handler=SlowReviewer()).run()
    assert isinstance(info.value.__cause__, ReviewTimeoutError)
    assert [o.raw for o in info.value.completed_outputs] == ["task 1 | "]


class Summary(BaseModel):
    title: str


def test_edited_typed_output_is_parsed_again() -> None:
    task = Task(
        description="d",
        handler=lambda ctx: Summary(title="old"),
        output_type=Summary,
        review=Review.required(),
    )
    reviewer = ScriptedReviewHandler([Edit('{"title": "new"}')])
    output = Ensemble(tasks=[task], review_handler=reviewer).run().task_outputs[0]
    assert output.parsed == Summary(title="new")


def test_reviews_are_emitted_as_events() -> None:
    class Collect:
        def __init__(self) -> None:
            self.decisions: list[str] = []

        def on_event(self, event: object) -> None:
            if isinstance(event, ReviewDecided):
                self.decisions.append(event.decision)

    listener = Collect()
    reviewer = ScriptedReviewHandler([Continue(), Edit("x")])
    Ensemble(
        tasks=echo_tasks(2),
        review_handler=reviewer,
        review_policy="after_every_task",
        listeners=[listener],
    ).run()
    assert listener.decisions == ["continue", "edit"]
