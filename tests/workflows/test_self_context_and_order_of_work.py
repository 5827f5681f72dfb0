"""One rule for a step naming itself in ``context`` (refused in every workflow, in Python and in
a crew file, naming the step), and the PARALLEL order of work kept per dependency
(``StepsRun``: each waiting step looks at its dependencies once, latest first)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from agentensemble import (
    ConfigurationError,
    Edge,
    Ensemble,
    Graph,
    Loop,
    ParallelErrorStrategy,
    ParallelExecutionError,
    Task,
    TaskHandlerContext,
    Workflow,
)
from agentensemble.config import ConfigFileError
from agentensemble.config.loader import ensemble_from_dict
from agentensemble.workflows.parallel import _member_deps
from agentensemble.workflows.step import outside_deps

ITSELF = (
    "has itself as context; a step cannot use its own output as its context: remove it from "
    "its context list"
)
WORKFLOWS = [Workflow.SEQUENTIAL, Workflow.PARALLEL, Workflow.HIERARCHICAL]


def named_itself(task: Task) -> Task:
    task.context.append(task)  # a Task cannot be built naming itself: only changed after
    return task


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda w: w.name)
def test_a_task_naming_itself_is_refused_in_every_workflow(workflow: Workflow) -> None:
    task = named_itself(Task(name="me", description="d"))
    with pytest.raises(ValidationError, match=rf"task 2 \('me'\) {ITSELF}"):
        Ensemble(tasks=[Task(description="first"), task], workflow=workflow)


@pytest.mark.parametrize("workflow", [Workflow.SEQUENTIAL, Workflow.PARALLEL])
def test_a_self_link_made_after_construction_is_refused_before_the_run(
    workflow: Workflow,
) -> None:
    calls: list[str] = []
    task = Task(name="me", description="d", handler=lambda _: calls.append("ran") or "x")
    ensemble = Ensemble(tasks=[task], workflow=workflow, capture="off")
    ensemble.run()
    named_itself(task)
    with pytest.raises(ValueError, match=rf"task 1 \('me'\) {ITSELF}"):
        ensemble.run()
    assert calls == ["ran"]  # the second run never started


@pytest.mark.parametrize("workflow", [Workflow.SEQUENTIAL, Workflow.PARALLEL])
def test_loops_graphs_fan_outs_and_nested_tasks_naming_themselves_are_refused(
    workflow: Workflow,
) -> None:
    loop = Loop(name="l", body=[Task(description="in")])
    loop.context.append(loop)
    with pytest.raises(ValidationError, match=rf"task 1 \('l'\) {ITSELF}"):
        Ensemble(tasks=[loop], workflow=workflow)

    state = named_itself(Task(name="s", description="s"))
    graph = Graph(name="g", start="s", states={"s": state}, edges=[Edge("s", Graph.END)])
    with pytest.raises(ConfigurationError, match=rf"Graph 'g': step 's' {ITSELF}"):
        Ensemble(tasks=[graph], workflow=workflow)

    each = named_itself(Task(name="each", description="{item}", for_each="docs"))
    with pytest.raises(ValidationError, match=rf"task 1 \('each'\) {ITSELF}"):
        Ensemble(tasks=[each], workflow=workflow)

    inner = named_itself(Task(name="inner", description="d"))
    with pytest.raises(ValidationError, match=rf"task 1 \('inner'\) {ITSELF}"):
        Ensemble(tasks=[Ensemble(tasks=[inner], workflow=workflow)], workflow=workflow)


def test_a_body_step_naming_itself_says_so() -> None:
    inner = named_itself(Task(name="in", description="d"))
    with pytest.raises(ConfigurationError, match=rf"Loop 'l' body: step 'in' {ITSELF}"):
        from agentensemble.workflows.structure import check_structure

        check_structure([Loop(name="l", body=[inner])], Workflow.PARALLEL)


@pytest.mark.parametrize(
    ("tasks", "where", "who"),
    [
        ({"a": {"description": "D", "context": ["a"]}}, "tasks.a.context[0]", "task 'a'"),
        (
            {"first": {"description": "F"}, "a": {"description": "D", "context": ["first", "a"]}},
            "tasks.a.context[1]",
            "task 'a'",
        ),
        (
            {"l": {"loop": {"body": {"x": {"description": "D", "context": ["x"]}}}}},
            "tasks.l.loop.body.x.context[0]",
            "task 'x'",
        ),
        (
            {"l": {"loop": {"body": {"x": {"description": "D"}}, "context": ["l"]}}},
            "tasks.l.loop.context[0]",
            "loop 'l'",
        ),
    ],
    ids=["task", "task after an earlier one", "body task", "loop"],
)
def test_a_crew_file_step_naming_itself_gets_the_same_error(
    tasks: dict[str, Any], where: str, who: str
) -> None:
    with pytest.raises(ConfigFileError) as caught:
        ensemble_from_dict({"tasks": tasks, "workflow": "parallel"})
    assert str(caught.value) == f"<dict>: {where}: {who} {ITSELF}"


def test_a_crew_file_step_naming_an_earlier_step_of_its_own_name_is_not_itself() -> None:
    """Names are unique in a file, so an earlier step holding the name cannot happen; a later
    one is still an unknown (later) name, not "itself"."""
    with pytest.raises(ConfigFileError, match=r"unknown task \(an earlier one\) 'b'"):
        ensemble_from_dict({"tasks": {"a": {"description": "D", "context": ["b"]}, "b": {}}})


def test_what_a_loop_waits_for_is_named_once_each_in_first_order_never_inside() -> None:
    a, b, c = (Task(description=n) for n in "abc")
    first = Task(description="first", context=[b, a, b])
    second = Task(description="second", context=[first, c, a])
    loop = Loop(name="l", body=[first, second], context=[c])
    found = outside_deps(loop)
    assert [x.description for x in found] == ["c", "b", "a"]
    assert all(x is y for x, y in zip(found, [c, b, a], strict=True))


def test_a_parallel_step_waits_for_its_members_once_each_latest_first_never_itself() -> None:
    a, b, c = (Task(description=n) for n in "abc")
    stranger = Task(description="stranger")
    task = Task(description="t", context=[a, c, stranger, b, a])
    task.context.append(task)
    position = {id(a): 1, id(b): 2, id(c): 3, id(task): 4}
    assert _member_deps(task, position) == [id(c), id(b), id(a)]
    loop = Loop(name="l", body=[Task(description="in", context=[a, b, c])])
    assert _member_deps(loop, {**position, id(loop): 4}) == [id(c), id(b), id(a)]


def recording(order: list[str]) -> Any:
    def handler(ctx: TaskHandlerContext) -> str:
        order.append(ctx.description)
        return ctx.description

    return handler


@pytest.mark.parametrize("limit", [None, 1, 2])
def test_a_parallel_chain_listed_backwards_runs_each_step_after_what_it_names(
    limit: int | None,
) -> None:
    order: list[str] = []
    steps: list[Any] = []
    for n in range(12):
        if n % 3 == 2:  # some loops in the chain: they wait for what their body names
            body = [Task(description=f"s{n}", handler=recording(order), context=list(steps))]
            steps.append(Loop(name=f"l{n}", body=body, max_iterations=1))
        else:
            steps.append(Task(description=f"s{n}", handler=recording(order), context=steps[:]))
    ensemble = Ensemble(
        tasks=steps[::-1], workflow=Workflow.PARALLEL, max_concurrency=limit, capture="off"
    )
    output = ensemble.run()
    assert order == [f"s{n}" for n in range(12)]
    assert [o.raw for o in output.task_outputs] == [f"s{n}" for n in range(11, -1, -1)]


def test_ready_steps_start_in_list_order_when_the_limit_holds_them_back() -> None:
    order: list[str] = []
    first = Task(description="first", handler=recording(order))
    later = [Task(description=f"w{n}", handler=recording(order), context=[first]) for n in range(5)]
    free = Task(description="free", handler=recording(order))
    ensemble = Ensemble(
        tasks=[*later, first, free], workflow=Workflow.PARALLEL, max_concurrency=1, capture="off"
    )
    ensemble.run()
    assert order == ["first", "w0", "w1", "w2", "w3", "w4", "free"]


def test_a_failure_skips_only_what_waits_on_it_directly_or_not() -> None:
    order: list[str] = []

    def broken(_: TaskHandlerContext) -> str:
        raise RuntimeError("boom")

    root = Task(description="root", handler=recording(order))
    bad = Task(description="bad", handler=broken, context=[root])
    after = Task(description="after", handler=recording(order), context=[root, bad])
    later = Task(description="later", handler=recording(order), context=[after])
    aside = Task(description="aside", handler=recording(order), context=[root])
    ensemble = Ensemble(
        tasks=[later, after, aside, bad, root],
        workflow=Workflow.PARALLEL,
        parallel_error_strategy=ParallelErrorStrategy.CONTINUE_ON_ERROR,
        capture="off",
    )
    with pytest.raises(ParallelExecutionError) as caught:
        ensemble.run()
    assert sorted(order) == ["aside", "root"]
    assert [s.description for s in caught.value.skipped] == ["later", "after"]


def test_a_scope_finds_the_innermost_record_of_each_step_in_order() -> None:
    """``Scope.lookup_all`` / ``gather`` look every step up in C, one pass per scope: an inner
    record (even an empty one) hides an outer one, a scope that recorded nothing is skipped,
    and a step recorded nowhere gives nothing."""
    from agentensemble.outputs import TaskOutput
    from agentensemble.workflows.step import RunState, Scope

    def out(raw: str) -> TaskOutput:
        return TaskOutput(raw=raw, task_description=raw, agent_role="r")

    a, b, c, d = (Task(description=n) for n in "abcd")
    root = Scope()
    root.record(a, [out("a outer")])
    root.record(b, [out("b outer")])
    root.record(c, [out("c outer")])
    middle = root.child()
    middle.record(b, [out("b inner")])
    middle.record(c, [])
    inner = middle.child()  # records nothing: skipped
    found = inner.lookup_all([c, b, d, a, b])
    assert [o.raw for o in found] == ["b inner", "a outer", "b inner"]
    assert [o.raw for o in root.lookup_all([c, d, a])] == ["c outer", "a outer"]
    assert Scope().child().lookup_all([a]) == []
    items = inner.gather([a, b], RunState().context_items_of)
    assert [item.output for item in items] == ["a outer", "b inner"]
    middle.record(a, [out("a inner")])  # recorded after: the kept result is not used
    assert [item.output for item in inner.gather([a, b], RunState().context_items_of)] == [
        "a inner",
        "b inner",
    ]
