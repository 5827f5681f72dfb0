"""A run's output can be pickled and deep-copied (multiprocessing, caches, joblib): a run with
tools carried each tool's metrics with their lock, which neither could copy."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

from agentensemble import Agent, Ensemble, EnsembleOutput, Task, Workflow, tool
from agentensemble.testing import ScriptedChatModel, tool_calls
from agentensemble.tools.metrics import CallOutcome


@tool(description="Echo a value.")
def echo(value: str) -> str:
    return value


class KeyedModel(ScriptedChatModel):
    """A model object holding its provider key."""

    api_key = "sk-live-never-in-a-pickle"

    def __init__(self, replies: list[str]) -> None:
        super().__init__(replies)
        self.key = self.api_key  # held by the instance, so a pickle of it carries it


def _run(workflow: Workflow, *, read_trace: bool) -> EnsembleOutput:
    tasks = [
        Task(
            description=f"echo {n}",
            expected_output="the value",
            agent=Agent(
                role=f"worker {n}",
                goal="echo",
                tools=[echo],
                llm=ScriptedChatModel([tool_calls(("echo", {"value": str(n)})), f"done {n}"]),
            ),
        )
        for n in range(2)
    ]
    output = Ensemble(tasks=tasks, workflow=workflow).run()
    if read_trace:
        assert output.trace is not None
    return output


COPIES: list[tuple[str, Any]] = [
    ("pickle", lambda output: pickle.loads(pickle.dumps(output))),
    ("deepcopy", copy.deepcopy),
    ("model_copy(deep=True)", lambda output: output.model_copy(deep=True)),
]


@pytest.mark.parametrize("workflow", [Workflow.SEQUENTIAL, Workflow.PARALLEL])
@pytest.mark.parametrize("read_trace", [False, True], ids=["trace unread", "trace read"])
@pytest.mark.parametrize(("how", "copied"), COPIES, ids=[how for how, _ in COPIES])
def test_the_output_of_a_run_with_tools_copies_whole(
    workflow: Workflow, read_trace: bool, how: str, copied: Any
) -> None:
    output = _run(workflow, read_trace=read_trace)

    again = copied(output)

    assert again == output
    assert again.tool_metrics["echo"].calls == 2
    assert again.trace == output.trace
    assert [task.raw for task in again.task_outputs] == ["done 0", "done 1"]


def test_copied_metrics_count_on_their_own() -> None:
    metrics = _run(Workflow.SEQUENTIAL, read_trace=False).tool_metrics["echo"]

    again = pickle.loads(pickle.dumps(metrics))
    again.record(CallOutcome.ERROR, 0.5)

    assert (again.calls, again.errors) == (3, 1)
    assert (metrics.calls, metrics.errors) == (2, 0)


def _loop_run() -> tuple[Any, Task, EnsembleOutput]:
    from agentensemble import Loop

    body = Task(
        description="draft",
        expected_output="a draft",
        agent=Agent(role="writer", goal="write", llm=ScriptedChatModel(["one", "two"])),
    )
    loop = Loop(name="drafts", body=[body], until=lambda output: True, max_iterations=2)
    return loop, body, Ensemble(tasks=[loop]).run()


def test_an_output_whose_steps_hold_lambdas_pickles_without_its_definition() -> None:
    loop, body, output = _loop_run()  # the loop's `until` is a lambda: pickle refuses it

    again = pickle.loads(pickle.dumps(output))

    assert again == output
    assert output.output_for(loop) is not None
    assert again.output_for(loop) is None  # identity: no task of this process is in the copy
    assert again.output_for(body) is None


def test_a_deep_copy_answers_output_for_the_same_tasks() -> None:
    loop, body, output = _loop_run()

    again = copy.deepcopy(output)

    assert again == output
    assert again.output_for(loop) == output.output_for(loop)
    assert again.output_for(body) == output.output_for(body)
    assert again.output_for(body) is not output.output_for(body)  # the outputs are copies


def test_a_pickled_output_carries_no_agent_or_model_and_so_no_key() -> None:
    agent = Agent(role="writer", goal="write", llm=KeyedModel(["hello"]))
    output = Ensemble(tasks=[Task(description="hi", expected_output="hi", agent=agent)]).run()

    data = pickle.dumps(output)

    assert b"sk-live-never-in-a-pickle" not in data
    assert pickle.loads(data).raw == "hello"
