"""A task's context is gathered in proportion to what is new: ``Scope.gather`` keeps its last
result and, when the next task names the same steps (by identity) and more, looks up only the
new ones; anything else builds it all again. Both paths must give what ``lookup_all`` gives,
and the prompt must be the text it was before. Counted and compared, never timed."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Sequence
from typing import Any

from agentensemble import Agent, Ensemble, Task
from agentensemble.execution.prompts import ContextItem, ContextItems, build_user_prompt
from agentensemble.outputs import TaskOutput
from agentensemble.task import TaskHandlerContext
from agentensemble.testing import ScriptedChatModel
from agentensemble.workflows.step import RunState, Scope


def out(text: str) -> TaskOutput:
    return TaskOutput(raw=text, task_description=f"about {text}", agent_role="r")


class Counted:
    """``RunState.context_items_of``, remembering how many outputs each call converted."""

    def __init__(self) -> None:
        self.state = RunState()
        self.sizes: list[int] = []

    def __call__(self, outputs: Sequence[TaskOutput]) -> list[ContextItem]:
        self.sizes.append(len(outputs))
        return self.state.context_items_of(outputs)


def check(scope: Scope, steps: list[Any], as_items: Counted) -> list[str]:
    """``gather`` gives the items of ``lookup_all``'s outputs (each output's one item)."""
    items = scope.gather(steps, as_items)
    expected = as_items.state.context_items_of(scope.lookup_all(steps))
    assert len(items) == len(expected)
    assert all(x is y for x, y in zip(items, expected, strict=True))
    assert items.sections() == [item.section for item in expected]
    return [item.output for item in items]


def test_a_chain_looks_up_only_the_new_step_and_a_change_of_shape_builds_it_all_again() -> None:
    a, b, c, d = object(), object(), object(), object()
    top = Scope()
    counted = Counted()
    top.record(a, [out("a")])
    check(top, [a], counted)
    top.record(b, [out("b1"), out("b2")])
    check(top, [a, b], counted)  # the prefix path: only b's outputs are new
    top.record(c, [])
    check(top, [a, b, c], counted)
    check(top, [a, b, c], counted)  # the same steps again: nothing new
    assert counted.sizes == [1, 2, 0]

    counted.sizes.clear()
    check(top, [b, a], counted)  # another order: built again
    check(top, [a], counted)  # fewer steps: built again
    check(top, [a, d], counted)  # d not run yet: nothing found, and the result not kept
    top.record(d, [out("d")])
    check(top, [a, d], counted)  # so d's output is found now (built again)
    check(top, [a, d, b], counted)  # kept again: only b's two outputs are new
    assert counted.sizes == [3, 1, 0, 2, 2]
    assert check(top, [], counted) == []


def test_a_step_run_again_or_hidden_by_an_inner_run_is_looked_up_again() -> None:
    a, b, c = object(), object(), object()
    top = Scope()
    counted = Counted()
    top.record(a, [out("a")])
    top.record(b, [out("b")])
    check(top, [a, b], counted)
    top.record(a, [out("a, again")])  # a graph's state visited again
    assert check(top, [a, b, c], counted) == ["a, again", "b"]

    inner = top.child()
    check(inner, [a, b], counted)
    inner.record(b, [out("b inside")])  # an inner run hides the outer one
    assert check(inner, [a, b], counted) == ["a, again", "b inside"]
    top.record(c, [out("c")])  # a new step outside: found from inside
    assert check(inner, [a, b, c], counted) == ["a, again", "b inside", "c"]
    top.record(a, [out("a, third")])  # the outer run changes what the inner scope finds
    assert check(inner, [a, b, c], counted) == ["a, third", "b inside", "c"]
    assert check(top, [a, b, c], counted) == ["a, third", "b", "c"]


def test_two_equal_looking_tasks_are_two_steps() -> None:
    agent = Agent(role="Writer", goal="g", llm=ScriptedChatModel([]))
    first, second = (Task(description="Same", agent=agent) for _ in range(2))
    assert first == second and first is not second  # pydantic compares fields
    top = Scope()
    counted = Counted()
    top.record(first, [out("first")])
    top.record(second, [out("second")])
    assert check(top, [first], counted) == ["first"]
    assert check(top, [second], counted) == ["second"]
    assert check(top, [second, first], counted) == ["second", "first"]
    assert check(top, [first, second], counted) == ["first", "second"]


def test_context_items_render_the_same_prompt_as_a_list_of_items() -> None:
    items = [ContextItem(f"step {n}", "Writer", f"output {n}") for n in range(4)]
    whole = ContextItems(items)
    grown = ContextItems(items[:1]).extended(items[1:3]).extended([]).extended(items[3:])
    assert list(whole) == list(grown) == items and whole == grown == items
    assert whole.sections() == grown.sections() == [item.section for item in items]
    assert whole[1] is items[1] and whole[-1] is items[-1] and whole[1:3] == items[1:3]
    for context in (whole, grown):
        assert build_user_prompt("T", "E", context) == build_user_prompt("T", "E", items)
        assert build_user_prompt("T", "E", context, "## Format") == build_user_prompt(
            "T", "E", items, "## Format"
        )
    assert build_user_prompt("T", "E", ContextItems()) == build_user_prompt("T", "E", [])
    assert whole.extended(()) is whole
    for made in (copy.copy(whole), copy.deepcopy(whole), pickle.loads(pickle.dumps(whole))):
        assert list(made) == items and made.sections() == whole.sections()


def test_extending_context_items_never_changes_a_view() -> None:
    """``extended`` appends in place only from the longest view of its lists: views made
    before, and other extensions of the same view, keep what they showed."""
    a, b, c, d = (ContextItem(name, "r", name) for name in "abcd")
    empty = ContextItems()
    first = empty.extended([a])
    second = first.extended([b])  # appended in place
    other = first.extended([c])  # first is no longer the longest view: copied
    third = second.extended([d])
    again = second.extended([c])
    assert [list(view) for view in (empty, first, second, other, third, again)] == [
        [],
        [a],
        [a, b],
        [a, c],
        [a, b, d],
        [a, b, c],
    ]
    assert [view.sections() for view in (first, other, again)] == [
        [a.section],
        [a.section, c.section],
        [a.section, b.section, c.section],
    ]
    assert list(empty) == [] and len(empty) == 0  # a kept empty view never grows


def test_every_prompt_is_the_text_built_from_the_earlier_outputs_on_both_paths() -> None:
    """Chains (the kept path) mixed with other orders, subsets and repeats (built again): each
    task's prompt is what ``build_user_prompt`` makes from a plain list of its context's items;
    a handler task gets the same outputs as ``context_outputs``."""
    model = ScriptedChatModel([f"answer {n}" for n in range(9)])
    agent = Agent(role="Writer", goal="Write", llm=model)
    seen: list[list[str]] = []

    def handler(ctx: TaskHandlerContext) -> str:
        seen.append([o.raw for o in ctx.context_outputs])
        return "handled"

    t: list[Task] = []

    def add(context: list[Task], **fields: Any) -> None:
        n = len(t)
        fields.setdefault("agent", agent)
        t.append(Task(description=f"step {n}", expected_output=f"E{n}", context=context, **fields))

    add([])
    add([t[0]])
    add([t[0], t[1]])
    add([t[1], t[0]])  # another order
    add([t[1], t[0], t[3]])  # extends the one before
    add([t[2]])  # a subset
    add([t[0], t[1], t[2], t[3], t[4], t[5]], agent=None, handler=handler)
    add([t[0], t[1], t[2], t[3], t[4], t[5], t[6]])  # extends the handler's
    add([t[0], t[0], t[6], t[7]])  # a step named twice
    add([t[0], t[0], t[6], t[7]])  # the same as the one before

    result = Ensemble(tasks=t).run()

    outputs = result.task_outputs
    assert outputs[6].raw == "handled"
    assert seen == [[outputs[i].raw for i in range(6)]]
    position = {id(task): n for n, task in enumerate(t)}
    prompts = iter(request.last_user_content for request in model.requests)
    for n, task in enumerate(t):
        if task.handler is not None:
            continue
        shown = [outputs[position[id(step)]] for step in task.context]
        items = [ContextItem(o.task_description, o.agent_role, o.raw) for o in shown]
        assert next(prompts) == build_user_prompt(f"step {n}", f"E{n}", items)
    assert next(prompts, None) is None


def test_what_a_task_waits_for_is_what_it_names_once_each_in_order() -> None:
    """``outside_deps`` of a task (its fast path): each named step once, first place kept, not
    the task itself; two equal-looking tasks are two steps."""
    from agentensemble.workflows.step import outside_deps

    agent = Agent(role="Writer", goal="g", llm=ScriptedChatModel([]))
    a, b, same = (Task(description=name, agent=agent) for name in ("a", "b", "b"))
    task = Task(description="t", agent=agent, context=[b, a, b, same, a])
    found = outside_deps(task)
    assert len(found) == 3
    assert all(x is y for x, y in zip(found, [b, a, same], strict=True))
    task.context.append(task)  # no validation on append: a task never waits for itself
    assert len(outside_deps(task)) == 3
