"""The per-run copies on every step: ``StepCall.at`` and ``AgentTask.for_run`` copy without
running ``__init__`` again, and must give what ``dataclasses.replace`` gives."""

from __future__ import annotations

import dataclasses

import pytest

from agentensemble.execution.agent_executor import AgentTask, ExecutionEnv
from agentensemble.testing import ScriptedChatModel
from agentensemble.workflows.step import RunState, Scope, StepCall


def a_call() -> StepCall:
    return StepCall(
        env=ExecutionEnv(), inputs={"topic": "x"}, state=RunState(total=3), scope=Scope()
    )


def test_at_gives_what_replace_gives_and_leaves_the_call_alone() -> None:
    call = a_call()
    scope = call.scope.child()
    moved = call.at(2, scope=scope, within=("loop 1",))
    expected = dataclasses.replace(call, base=2, scope=scope, within=("loop 1",))
    assert moved == expected
    assert type(moved) is StepCall
    assert moved.state is call.state and moved.env is call.env  # shared, as replace shares them
    assert (call.base, call.scope, call.within) == (0, call.scope, ())
    assert call.scope is not scope


def test_at_refuses_a_field_the_call_does_not_have() -> None:
    with pytest.raises(TypeError, match="contxt"):
        a_call().at(1, contxt=())


def test_for_run_gives_what_replace_gives_and_leaves_the_task_alone() -> None:
    task = AgentTask(
        role="Writer",
        goal="Write",
        description="Write about {topic}",
        expected_output="A line",
        model=ScriptedChatModel(["done"]),
        inputs={"topic": "x"},
    )
    run = task.for_run("Write about x (revised)", ["context item"])
    expected = dataclasses.replace(
        task, description="Write about x (revised)", context=["context item"]
    )
    assert run == expected
    assert type(run) is AgentTask
    assert (task.description, task.context) == ("Write about {topic}", ())
    run.memory = None
    run.context = []
    assert task.context == ()
