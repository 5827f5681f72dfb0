"""The run's cost counts the model calls no task output holds (a hierarchical manager's)."""

from __future__ import annotations

import pytest

from agentensemble.outputs import EnsembleOutput
from agentensemble.tracing.recorder import TraceRecorder


@pytest.mark.parametrize(
    ("extra", "total"),
    [([], None), ([0.25], 0.25), ([0.25, 0.5], 0.75), ([0.25, None], None)],
)
def test_complete_adds_the_extra_costs_to_the_run(
    extra: list[float | None], total: float | None
) -> None:
    output = EnsembleOutput(raw="done", task_outputs=[])
    output._extra_costs = extra
    copied = output.model_copy(update={"run_id": "r"})  # as the run hands it over
    done = TraceRecorder("r", capture="off").complete(copied)
    assert done.cost_usd == (pytest.approx(total) if total is not None else None)
    assert done.trace is None


def test_complete_without_extra_costs_set_keeps_the_run_cost_unknown() -> None:
    output = EnsembleOutput(raw="done", task_outputs=[])
    done = TraceRecorder("r").complete(output)
    assert done.cost_usd is None
    assert done.trace is not None and done.trace.status == "completed"
