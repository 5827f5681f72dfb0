"""The dispatch point: every Workflow has exactly one runner, built from the run's settings."""

from __future__ import annotations

import pytest

from agentensemble import ParallelErrorStrategy, Workflow
from agentensemble.testing import ScriptedChatModel
from agentensemble.workflows.delegation import Team
from agentensemble.workflows.hierarchical import HierarchicalRunner, ManagerSetup
from agentensemble.workflows.parallel import ParallelRunner
from agentensemble.workflows.runners import RUNNERS, RunSettings, SequentialRunner, runner_for


def test_every_workflow_has_a_runner() -> None:
    assert set(RUNNERS) == set(Workflow)


@pytest.mark.parametrize(
    ("workflow", "kind"),
    [
        (Workflow.SEQUENTIAL, SequentialRunner),
        (Workflow.PARALLEL, ParallelRunner),
        (Workflow.HIERARCHICAL, HierarchicalRunner),
        ("parallel", ParallelRunner),  # the enum's value works too
    ],
)
def test_runner_for_picks_the_workflow_runner(workflow: Workflow, kind: type) -> None:
    setup = ManagerSetup(team=Team([], max_depth=3), model=ScriptedChatModel())
    assert isinstance(runner_for(workflow, RunSettings(manager=setup)), kind)


def test_the_parallel_runner_gets_the_settings() -> None:
    settings = RunSettings(
        max_concurrency=2, parallel_error_strategy=ParallelErrorStrategy.CONTINUE_ON_ERROR
    )
    runner = runner_for(Workflow.PARALLEL, settings)

    assert isinstance(runner, ParallelRunner)
    assert runner.max_concurrency == 2
    assert runner.error_strategy is ParallelErrorStrategy.CONTINUE_ON_ERROR


def test_prepared_task_is_still_importable_from_sequential() -> None:
    from agentensemble.workflows.base import PreparedTask
    from agentensemble.workflows.sequential import PreparedTask as Old

    assert Old is PreparedTask
