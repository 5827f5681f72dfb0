"""``Task(for_each=...)``: one run per item, concurrently within max_concurrency, in item order."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentensemble import (
    Agent,
    ConfigurationError,
    Ensemble,
    Loop,
    PromptTemplateError,
    Task,
    TaskExecutionError,
    Workflow,
)
from agentensemble.testing import FunctionChatModel, ScriptedChatModel
from agentensemble.workflows.prepare import needed_inputs


def test_each_item_runs_once_with_item_and_index_and_the_reducer_sees_all_in_order() -> None:
    model = ScriptedChatModel(["s0", "s1", "s2", "merged"])
    mapper = Task(name="summarise", description="Summarise {item} (#{index})", for_each="docs")
    reducer = Task(name="merge", description="Merge the summaries", context=[mapper])
    out = Ensemble(tasks=[mapper, reducer], llm=model).run({"docs": ["a", "b", "c"]})

    assert [o.task_description for o in out.task_outputs[:3]] == [
        "Summarise a (#0)",
        "Summarise b (#1)",
        "Summarise c (#2)",
    ]
    prompt = model.requests[-1].last_user_content
    assert prompt.index("s0") < prompt.index("s1") < prompt.index("s2")
    assert out.raw == "merged"


def test_outputs_come_back_in_item_order_whatever_order_they_finish_in() -> None:
    async def slow_first(ctx: Any) -> str:
        if ctx.inputs["index"] == 0:
            await asyncio.sleep(0.05)
        return f"done {ctx.inputs['item']}"

    mapper = Task(name="m", description="{item}", for_each="items", handler=slow_first)
    out = Ensemble(tasks=[mapper]).run({"items": ["x", "y", "z"]})
    assert [o.raw for o in out.task_outputs] == ["done x", "done y", "done z"]


def test_no_more_than_max_concurrency_items_run_at_once() -> None:
    running = 0
    peak = 0

    async def answer(messages: Any, tools: Any) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return "ok"

    model = FunctionChatModel(answer)
    mapper = Task(name="m", description="do {item}", for_each="items")
    Ensemble(tasks=[mapper], llm=model, max_concurrency=3).run({"items": list(range(10))})
    assert peak == 3


def test_an_empty_list_runs_nothing_and_the_next_task_still_runs() -> None:
    mapper = Task(name="m", description="{item}", for_each="items", handler=lambda ctx: "never")
    after = Task(
        name="after",
        description="after",
        context=[mapper],
        handler=lambda ctx: str(len(ctx.context_outputs)),
    )
    out = Ensemble(tasks=[mapper, after]).run({"items": []})
    assert [o.raw for o in out.task_outputs] == ["0"]


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({}, "inputs have no 'items'"),
        ({"items": "a,b"}, "is a str, not a list"),
        ({"items": {"a": 1}}, "is a dict, not a list"),
    ],
)
def test_a_missing_or_non_list_input_is_refused_before_any_request(
    inputs: dict[str, Any], message: str
) -> None:
    model = ScriptedChatModel()
    mapper = Task(name="m", description="{item}", for_each="items")
    with pytest.raises(ConfigurationError, match=message):
        Ensemble(tasks=[mapper], llm=model).run(inputs)
    assert model.requests == []


def test_items_that_are_not_text_fill_item_as_json() -> None:
    mapper = Task(
        name="m", description="Read {item}", for_each="docs", handler=lambda ctx: ctx.description
    )
    out = Ensemble(tasks=[mapper]).run({"docs": [{"title": "A"}, 3]})
    assert [o.raw for o in out.task_outputs] == ['Read {"title": "A"}', "Read 3"]


def test_a_failing_item_fails_the_run_keeping_completed_items() -> None:
    def handler(ctx: Any) -> str:
        if ctx.inputs["item"] == "bad":
            raise ValueError("cannot read")
        return "ok"

    first = Task(name="first", description="first", handler=lambda ctx: "kept")
    mapper = Task(name="m", description="{item}", for_each="items", handler=handler)
    with pytest.raises(TaskExecutionError) as caught:
        Ensemble(tasks=[first, mapper], max_concurrency=1).run({"items": ["good", "bad", "later"]})
    assert caught.value.task is mapper
    assert [o.raw for o in caught.value.completed_outputs] == ["kept", "ok"]


def test_fan_out_in_parallel_and_inside_a_loop() -> None:
    mapper = Task(
        name="m", description="{item}", for_each="items", handler=lambda ctx: ctx.description
    )
    loop = Loop(name="l", body=[mapper], max_iterations=2)
    out = Ensemble(tasks=[loop], workflow=Workflow.PARALLEL).run({"items": ["a", "b"]})
    assert [o.raw for o in out.task_outputs] == ["a", "b", "a", "b"]


QUOTED_DOC = '"doc '


def test_chunked_reduce_over_a_long_list() -> None:
    documents = [f"doc {n}" for n in range(10)]
    chunks = [documents[i : i + 4] for i in range(0, len(documents), 4)]
    summarise = Task(
        name="chunk",
        description="Summarise these documents: {item}",
        for_each="chunks",
        handler=lambda ctx: f"summary of {ctx.description.count(QUOTED_DOC)} docs",
    )
    merge = Task(
        name="merge",
        description="Merge",
        context=[summarise],
        handler=lambda ctx: " + ".join(o.raw for o in ctx.context_outputs),
    )
    out = Ensemble(tasks=[summarise, merge]).run({"chunks": chunks})
    assert out.raw == "summary of 4 docs + summary of 4 docs + summary of 2 docs"


def test_a_fan_out_tasks_agent_may_use_item_and_index_in_its_role_goal_and_background() -> None:
    model = ScriptedChatModel(["read a", "read b"])
    reader = Agent(
        role="Reader of document {index}",
        goal="Understand {item}",
        background="You read {item} for the {audience}",
    )
    read = Task(name="read", description="Summarise it", agent=reader, for_each="docs")
    out = Ensemble(tasks=[read], llm=model).run({"docs": ["a", "b"], "audience": "board"})

    assert [o.agent_role for o in out.task_outputs] == [
        "Reader of document 0",
        "Reader of document 1",
    ]
    system = [request.messages[0]["content"] for request in model.requests]
    assert "Understand a" in system[0] and "You read a for the board" in system[0]
    assert "Understand b" in system[1] and "You read b for the board" in system[1]


def test_item_in_an_agent_that_also_does_another_task_is_refused_before_any_request() -> None:
    model = ScriptedChatModel()
    reader = Agent(role="Reader", goal="Understand {item}")
    read = Task(name="read", description="Summarise it", agent=reader, for_each="docs")
    merge = Task(name="merge", description="Merge the summaries", agent=reader, context=[read])
    with pytest.raises(PromptTemplateError, match="filled only in a for_each task") as caught:
        Ensemble(tasks=[read, merge], llm=model).run({"docs": ["a"]})
    assert caught.value.missing == ["item"]
    assert model.requests == []


def test_item_in_an_agent_is_refused_when_agents_delegate() -> None:
    # a delegating run makes every agent a worker, asked outside any item
    model = ScriptedChatModel()
    reader = Agent(role="Reader", goal="Understand {item}")
    boss = Agent(role="Boss", goal="Plan", allow_delegation=True)
    read = Task(name="read", description="Summarise it", agent=reader, for_each="docs")
    plan = Task(name="plan", description="Plan", agent=boss)
    with pytest.raises(PromptTemplateError, match="nobody in the run delegates"):
        Ensemble(tasks=[plan, read], llm=model).run({"docs": ["a"]})
    assert model.requests == []


def test_a_fan_out_agent_with_item_inside_a_loop_and_a_nested_ensemble() -> None:
    model = ScriptedChatModel(["1", "2", "3", "4"])
    reader = Agent(role="Reader", goal="Understand {item}")
    read = Task(name="read", description="Summarise it", agent=reader, for_each="docs")
    loop = Loop(name="twice", body=[Ensemble(tasks=[read])], max_iterations=2)
    out = Ensemble(tasks=[loop], llm=model, max_concurrency=1).run({"docs": ["a", "b"]})
    assert [o.raw for o in out.task_outputs] == ["1", "2", "3", "4"]
    goals = ["Understand a" in r.messages[0]["content"] for r in model.requests]
    assert goals == [True, False, True, False]


def test_validate_does_not_ask_for_item_or_index_used_by_a_fan_out_agent() -> None:
    reader = Agent(role="Reader {index}", goal="Understand {item} for {audience}")
    read = Task(name="read", description="Summarise it", agent=reader, for_each="docs")
    assert needed_inputs(Ensemble(tasks=[read])) == {"audience": "text", "docs": "list"}
    shared = Task(name="again", description="Again", agent=reader)
    needed = needed_inputs(Ensemble(tasks=[read, shared]))
    assert needed == {"audience": "text", "docs": "list", "index": "text", "item": "text"}
