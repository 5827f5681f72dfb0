"""A handler task that runs an ensemble of its own: the inner run's failure is the outer task's.

Attack: the inner ``TaskExecutionError`` went up unchanged, so ``.task`` named a task the
caller never built and ``completed_outputs`` held the inner outputs; the outer run's finished
outputs were gone.
"""

from __future__ import annotations

import pytest

from agentensemble import Ensemble, Task, TaskExecutionError, TaskHandlerContext


def failing(ctx: TaskHandlerContext) -> str:
    raise ValueError("inner boom")


def inner_ensemble() -> tuple[Ensemble, Task]:
    bad = Task(description="Inner second", handler=failing)
    return Ensemble(tasks=[Task(description="Inner first", handler=lambda c: "in"), bad]), bad


def sync_nested(ctx: TaskHandlerContext) -> str:
    return inner_ensemble()[0].run().raw


async def async_nested(ctx: TaskHandlerContext) -> str:
    return (await inner_ensemble()[0].arun()).raw


@pytest.mark.parametrize("handler", [sync_nested, async_nested], ids=["run()", "arun()"])
def test_a_failing_nested_ensemble_fails_the_outer_task_and_keeps_the_outer_outputs(
    handler: object,
) -> None:
    first = Task(description="Outer first", handler=lambda c: "kept")
    outer = Task(description="Outer second", handler=handler)  # type: ignore[arg-type]
    with pytest.raises(TaskExecutionError) as caught:
        Ensemble(tasks=[first, outer]).run()
    error = caught.value
    assert error.task is outer
    assert [o.raw for o in error.completed_outputs] == ["kept"]
    inner = error.__cause__
    assert isinstance(inner, TaskExecutionError)
    assert inner.task is not None and inner.task.description == "Inner second"
    assert [o.raw for o in inner.completed_outputs] == ["in"]
    assert "Outer second" in str(error) and "inner boom" in str(error)
