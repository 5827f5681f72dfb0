"""Work done per run grows with the setup, never with its square: a task's tools are resolved
once and kept between runs while its tool lists hold the same tools, and each task's output
becomes prompt context once, whatever number of later tasks read it. Counted, not timed (speed
lives in benchmarks/)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import agentensemble.workflows.step as step_module
from agentensemble import Agent, AgentTool, Ensemble, Task, ToolResult, tool
from agentensemble.execution.prompts import ContextItem
from agentensemble.testing import ScriptedChatModel, tool_call
from agentensemble.tools.resolver import ResolvedTools, ToolResolver


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return key.upper()


@tool
def note(text: str) -> str:
    """Take a note."""
    return "noted"


@tool
def stamp(text: str) -> str:
    """Stamp a text."""
    return "stamped"


@pytest.fixture
def resolved_sources(monkeypatch: pytest.MonkeyPatch) -> Counter[tuple[str, ...]]:
    """Counts each resolve, by the names of the tools resolved."""
    counts: Counter[tuple[str, ...]] = Counter()
    real_resolve = ToolResolver.resolve

    def counting(self: ToolResolver, tools: Any) -> ResolvedTools:
        resolved = real_resolve(self, tools)
        counts[tuple(resolved.names)] += 1
        return resolved

    monkeypatch.setattr(ToolResolver, "resolve", counting)
    return counts


def test_tools_are_resolved_once_and_kept_between_runs(
    resolved_sources: Counter[tuple[str, ...]],
) -> None:
    model = ScriptedChatModel([tool_call("lookup", {"key": "a"}), "first", "second"] * 3)
    agent = Agent(role="Clerk", goal="Look things up", tools=[lookup], llm=model)
    ensemble = Ensemble(
        tasks=[
            Task(description="Look up a", agent=agent),
            Task(description="Write it down", agent=agent, tools=[note]),
        ]
    )
    ensemble.run()
    resolved_sources.clear()  # building the models and the first run resolved every list

    ensemble.run()
    assert resolved_sources == {}

    agent.tools.append(stamp)  # a list that changed is resolved again, and kept again
    ensemble.run()
    assert resolved_sources == {("lookup", "stamp"): 1, ("lookup", "stamp", "note"): 1}


def test_kept_tools_go_with_their_task_and_a_new_task_never_gets_them() -> None:
    import gc

    from agentensemble.workflows import prepare

    def run_once(tools: list[Any]) -> list[str]:
        model = ScriptedChatModel(["done"])
        task = Task(description="Look up", agent=Agent(role="Clerk", goal="Look", llm=model))
        task.tools = tools
        Ensemble(tasks=[task]).run()
        kept = prepare._resolved.get(id(task))
        assert kept is not None and kept[0]() is task
        return kept[2].names

    assert run_once([lookup]) == ["lookup"]
    gc.collect()
    # every task of those runs is gone, and so is what was kept for it: a later task that
    # happens to get the same id resolves its own tools
    assert all(kept[0]() is not None for kept in prepare._resolved.values())
    assert run_once([note]) == ["note"]


class Counting(AgentTool):
    """An AgentTool instance: its name and description are attributes that may change."""

    name = "counting"
    description = "Count."

    def execute(self, input: str) -> ToolResult:
        return ToolResult.success("1")


def test_a_list_with_an_agent_tool_instance_is_resolved_on_every_run(
    resolved_sources: Counter[tuple[str, ...]],
) -> None:
    counting = Counting()
    model = ScriptedChatModel(["first", "second"])
    agent = Agent(role="Clerk", goal="Count", tools=[counting], llm=model)
    ensemble = Ensemble(tasks=[Task(description="Count", agent=agent)])
    ensemble.run()
    counting.name = "renamed"
    resolved_sources.clear()

    ensemble.run()
    assert resolved_sources == {("renamed",): 1}


def test_each_output_becomes_context_once_however_many_tasks_read_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[ContextItem] = []

    def counted_context_item(*args: Any) -> ContextItem:
        built.append(ContextItem(*args))
        return built[-1]

    monkeypatch.setattr(step_module, "ContextItem", counted_context_item)
    count = 60
    model = ScriptedChatModel([f"output {n}" for n in range(count)])
    agent = Agent(role="Writer", goal="Write", llm=model)
    tasks: list[Task] = []
    for n in range(count):  # every task reads every earlier task: quadratic pairs
        tasks.append(Task(description=f"Step {n}", agent=agent, context=list(tasks)))

    result = Ensemble(tasks=tasks).run()

    assert result.raw == f"output {count - 1}"
    assert len(built) == count - 1  # one per output read (the last is read by none), not per pair
    last_prompt = model.requests[-1].last_user_content
    positions = [last_prompt.index(f"### Step {n} (Writer)\noutput {n}") for n in range(count - 1)]
    assert positions == sorted(positions)  # every earlier output, in task order


def test_looking_up_a_tasks_context_at_once_finds_what_looking_up_each_step_finds() -> None:
    """``Scope.lookup_all`` (one call per task) against ``lookup`` per step: the top level, an
    inner scope falling back to its parents, steps recorded with no outputs or never recorded;
    ``RunState.context_items_of`` gives each output its one item, in order."""
    from agentensemble.outputs import TaskOutput
    from agentensemble.workflows.step import RunState, Scope

    def out(text: str) -> TaskOutput:
        return TaskOutput(raw=text, task_description=text, agent_role="r")

    a, b, c, d, never = object(), object(), object(), object(), object()
    top = Scope()
    top.record(a, [out("a")])
    top.record(b, [])
    inner = top.child()
    inner.record(c, [out("c1"), out("c2")])
    inner.record(a, [out("a, again")])  # an inner run of ``a`` hides the outer one
    top.record(d, [out("d")])
    for scope in (top, inner):
        for steps in ([a, b, c, d, never], [d, a, a], []):
            expected = [o for step in steps for o in scope.lookup(step)]
            assert scope.lookup_all(steps) == expected
            assert all(x is y for x, y in zip(scope.lookup_all(steps), expected, strict=True))
    state = RunState()
    outputs = inner.lookup_all([a, c, d, a])
    items = state.context_items_of(outputs)
    assert [item.output for item in items] == ["a, again", "c1", "c2", "d", "a, again"]
    assert items[0] is items[-1] is state.context_item(outputs[0])
    assert state.context_items_of(outputs) == items
