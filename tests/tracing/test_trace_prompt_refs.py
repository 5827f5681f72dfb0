"""Prompts stored by reference (schema 2): a chain's trace holds each output once, gives every
prompt back exactly as sent (redacted), reads version 1 files, and refuses hostile references."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agentensemble import Agent, Ensemble, ExecutionTrace, Task
from agentensemble.logging import register_secret
from agentensemble.testing import ScriptedChatModel
from agentensemble.tracing import SCHEMA_VERSION
from agentensemble.tracing.trace import TaskTrace

FIXTURES = Path(__file__).parent / "fixtures"
WORDS = "plain words of an output " * 40  # ~1 kB: from the third task on, prompts are long


def chain(outputs: list[str], descriptions: list[str] | None = None) -> tuple[Any, list[str]]:
    """A sequential run, task n with every earlier task as context; the trace and the prompts
    the model was sent."""
    model = ScriptedChatModel(outputs)
    agent = Agent(role="Writer", goal="write")
    tasks: list[Task] = []
    for description in descriptions or [f"step {n}" for n in range(len(outputs))]:
        tasks.append(Task(description=description, agent=agent, context=list(tasks)))
    output = Ensemble(tasks=tasks, llm=model).run()
    assert output.trace is not None
    return output.trace, [request.last_user_content for request in model.requests]


def test_a_chain_stores_each_output_once_and_gives_every_prompt_back_exactly() -> None:
    outputs = [f"output-{n:02d} {WORDS}" for n in range(30)]
    trace, sent = chain(outputs)
    assert trace.schema_version == SCHEMA_VERSION == 2
    assert [task.user_prompt for task in trace.tasks] == sent
    assert sum(task.user_prompt_ref is not None for task in trace.tasks) >= 25
    saved = trace.to_json(indent=2)
    # linear: the first output is in its task's output and model turn, and in the first two
    # prompts showing it (stored whole: one too short to share, one with nothing to share)
    assert saved.count("output-00 ") == 4
    # each output three times (output, model turn, one prompt's rest) and 2 kB a task, where the
    # prompts alone were 10 times the outputs
    assert len(saved) < 3 * sum(len(o) for o in outputs) + 2000 * len(outputs)
    assert sum(len(p) for p in sent) > 10 * sum(len(o) for o in outputs)
    back = ExecutionTrace.from_json(saved)
    assert back == trace
    assert [task.user_prompt for task in back.tasks] == sent
    assert back.to_json(indent=2) == saved
    dumped = json.loads(saved)["tasks"][-1]
    assert dumped["user_prompt"] is None and set(dumped["user_prompt_ref"]) == {
        "start_of",
        "length",
        "rest",
    }


def test_copies_and_pickles_give_the_same_prompts() -> None:
    trace, sent = chain([f"output-{n} {WORDS}" for n in range(8)])
    assert [t.user_prompt for t in copy.deepcopy(trace).tasks] == sent
    assert [t.user_prompt for t in copy.copy(trace).tasks] == sent
    assert [t.user_prompt for t in pickle.loads(pickle.dumps(trace)).tasks] == sent


def test_a_description_holding_the_task_heading_still_gives_the_exact_prompt() -> None:
    """The place where a prompt's context ends is a guess the recorder checks."""
    descriptions = [f"step {n}\n\n## Task\nnot the heading" for n in range(8)]
    trace, sent = chain([f"output-{n} {WORDS}" for n in range(8)], descriptions)
    assert [task.user_prompt for task in trace.tasks] == sent
    assert [t.user_prompt for t in ExecutionTrace.from_json(trace.to_json()).tasks] == sent


def test_only_a_prompt_starting_with_an_earlier_ones_context_is_stored_by_reference() -> None:
    """Task 3 shows task 1, task 4 task 2 (whole: no earlier context they start with); task 5
    shows task 2 then task 1, so it starts with task 4's context."""
    model = ScriptedChatModel([f"output-{n} {WORDS * 3}" for n in range(5)])
    agent = Agent(role="Writer", goal="write")
    one = Task(description="one", agent=agent)
    two = Task(description="two", agent=agent)
    three = Task(description="three", agent=agent, context=[one])
    four = Task(description="four", agent=agent, context=[two])
    five = Task(description="five", agent=agent, context=[two, one])
    trace = Ensemble(tasks=[one, two, three, four, five], llm=model).run().trace
    assert trace is not None
    sent = [request.last_user_content for request in model.requests]
    assert [task.user_prompt for task in trace.tasks] == sent
    assert [task.user_prompt_ref is None for task in trace.tasks[:4]] == [True] * 4
    ref = trace.tasks[4].user_prompt_ref
    assert ref is not None and ref.start_of == 3


def test_a_secret_in_an_earlier_output_stays_redacted_in_every_later_prompt() -> None:
    secret = "chain-secret-value-2727"
    register_secret(secret)
    outputs = [f"output-{n} {WORDS}" + (f" key {secret}" if n == 2 else "") for n in range(10)]
    trace, sent = chain(outputs)
    saved = trace.to_json()
    assert secret not in saved
    prompts = [task.user_prompt or "" for task in ExecutionTrace.from_json(saved).tasks]
    for prompt, original in zip(prompts[3:], sent[3:], strict=True):
        assert secret not in prompt and "***" in prompt
        assert prompt == original.replace(secret, "***")


def test_a_version_1_trace_is_read_and_saved_as_version_2() -> None:
    text = (FIXTURES / "trace_v1.json").read_text(encoding="utf-8")
    trace = ExecutionTrace.from_json(text)
    v1 = json.loads(text)
    assert [t.user_prompt for t in trace.tasks] == [t["user_prompt"] for t in v1["tasks"]]
    assert trace.tasks[1].user_prompt_ref is None
    saved = json.loads(trace.to_json())
    assert saved["schema_version"] == 2
    assert [t["user_prompt"] for t in saved["tasks"]] == [t["user_prompt"] for t in v1["tasks"]]


# -- a trace read back is hostile input --------------------------------------------------------


def _trace(*tasks: dict[str, Any], version: int = 2) -> str:
    return json.dumps(
        {
            "schema_version": version,
            "run_id": "r",
            "started_at": "2026-11-28T00:00:00Z",
            "workflow": "sequential",
            "tasks": [
                {
                    "index": position + 1,
                    "description": "d",
                    "agent_role": "a",
                    "started_at": "2026-11-28T00:00:00Z",
                    **task,
                }
                for position, task in enumerate(tasks)
            ],
        }
    )


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        (({"user_prompt_ref": {"start_of": 0, "length": 0, "rest": "x"}},), "earlier task"),
        (
            (
                {"user_prompt": "abc"},
                {"user_prompt_ref": {"start_of": 2, "length": 1, "rest": ""}},
                {"user_prompt": "later"},
            ),
            "earlier task",
        ),
        (
            (
                {"user_prompt_ref": {"start_of": 1, "length": 1, "rest": ""}},
                {"user_prompt_ref": {"start_of": 0, "length": 1, "rest": ""}},
            ),
            "earlier task",
        ),
        (
            (
                {"user_prompt": "abc"},
                {"user_prompt_ref": {"start_of": -1, "length": 1, "rest": ""}},
            ),
            "greater than or equal to 0",
        ),
        (
            ({"user_prompt": "abc"}, {"user_prompt_ref": {"start_of": 0, "length": 4, "rest": ""}}),
            "has 3 characters",
        ),
        (({}, {"user_prompt_ref": {"start_of": 0, "length": 1, "rest": ""}}), "has 0 characters"),
        (
            (
                {"user_prompt": "abc"},
                {"user_prompt": "x", "user_prompt_ref": {"start_of": 0, "length": 1, "rest": ""}},
            ),
            "both",
        ),
    ],
    ids=["itself", "a-later-task", "a-loop", "negative", "past-the-end", "no-prompt", "both"],
)
def test_a_reference_that_is_not_to_an_earlier_prompt_is_refused(
    tasks: tuple[dict[str, Any], ...], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        ExecutionTrace.from_json(_trace(*tasks))


def test_an_expansion_bomb_gives_prompts_no_longer_than_the_text_the_file_holds() -> None:
    """Many references to a big prompt, each asking for more than it holds: refused; as much as
    it holds, many times over: each prompt is at most the file's own text, never a product."""
    big = "x" * 100_000
    greedy = [{"user_prompt": big}] + [
        {"user_prompt_ref": {"start_of": n, "length": 2 * 100_000 * (n + 1), "rest": big}}
        for n in range(20)
    ]
    with pytest.raises(ValidationError, match="characters"):
        ExecutionTrace.from_json(_trace(*greedy))
    chained = [{"user_prompt": big}] + [
        {"user_prompt_ref": {"start_of": n, "length": 100_000, "rest": ""}} for n in range(2000)
    ]
    text = _trace(*chained)
    trace = ExecutionTrace.from_json(text)
    assert all(len(task.user_prompt or "") <= len(text) for task in trace.tasks[-5:])
    assert trace.tasks[-1].user_prompt == big


def test_a_trace_newer_than_this_library_is_refused_with_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="newer than this agentensemble reads"):
        ExecutionTrace.from_json(_trace({"user_prompt": "p"}, version=SCHEMA_VERSION + 1))


def test_a_task_taken_out_of_its_trace_says_where_its_prompt_is() -> None:
    trace = ExecutionTrace.from_json(
        _trace(
            {"user_prompt": "abc"}, {"user_prompt_ref": {"start_of": 0, "length": 2, "rest": "z"}}
        )
    )
    assert trace.tasks[1].user_prompt == "abz"
    alone = TaskTrace.model_validate(trace.tasks[1].model_dump())
    with pytest.raises(ValueError, match="through the ExecutionTrace"):
        _ = alone.user_prompt


def test_a_parallel_run_refers_only_to_tasks_earlier_in_the_trace() -> None:
    """Tasks of a parallel run start and call the model in any order: a prompt may only be
    stored by reference to a task that started before it."""
    from agentensemble import Workflow

    model = ScriptedChatModel([f"output-{n} {WORDS * 2}" for n in range(8)])
    agent = Agent(role="Writer", goal="write")
    first = [Task(description=f"root {n}", agent=agent) for n in range(3)]
    wide = [Task(description=f"wide {n}", agent=agent, context=list(first)) for n in range(3)]
    last = Task(description="last", agent=agent, context=[*first, wide[0]])
    ensemble = Ensemble(tasks=[*first, *wide, last], llm=model, workflow=Workflow.PARALLEL)
    trace = ensemble.run().trace
    assert trace is not None
    sent = {request.last_user_content for request in model.requests}
    prompts = [task.user_prompt for task in trace.tasks]
    assert set(prompts) == sent
    for position, task in enumerate(trace.tasks):
        if task.user_prompt_ref is not None:
            assert task.user_prompt_ref.start_of < position
    assert any(task.user_prompt_ref is not None for task in trace.tasks)
    assert [t.user_prompt for t in ExecutionTrace.from_json(trace.to_json()).tasks] == prompts
