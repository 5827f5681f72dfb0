"""The structure check's exact verdict on tricky shapes, top level and inside: which error (type
and full message) or none. Pins the check itself, so a faster check gives the same answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentensemble import ConfigurationError, Edge, Ensemble, Graph, Loop, Task, Workflow
from agentensemble.workflows.structure import check_structure


def t(name: str, **kwargs: Any) -> Task:
    return Task(name=name, description=name, **kwargs)


def chain(n: int) -> list[Any]:
    steps: list[Any] = []
    for i in range(n):
        steps.append(t(f"t{i}", context=list(steps)))
    return steps


def with_context(step: Any, *context: Any) -> Any:
    """Set after construction, as a user can (the check runs again before each run)."""
    step.context = list(context)
    return step


def later_task() -> list[Any]:
    a, b = t("a"), t("b")
    return [with_context(a, b), b]


def itself() -> list[Any]:
    a = t("a")
    return [t("first"), with_context(a, a)]


def loop_names_itself() -> list[Any]:
    loop = Loop(name="l", body=[t("in")])
    return [t("first"), with_context(loop, loop)]


def body_step_names_itself() -> list[Any]:
    inner = t("in")
    return [t("first"), Loop(name="l", body=[t("before"), with_context(inner, inner)])]


def graph_state_names_itself() -> list[Any]:
    s = t("s")
    graph = Graph(
        name="g", start="s", states={"s": with_context(s, s)}, edges=[Edge("s", Graph.END)]
    )
    return [t("first"), graph]


def stranger_then_itself() -> list[Any]:
    a = t("a")
    return [t("first"), with_context(a, t("stranger"), a)]


def body_step_names_later_body_step() -> list[Any]:
    later = t("later")
    return [Loop(name="l", body=[t("in", context=[later]), later])]


def body_step_names_its_loop() -> list[Any]:
    inner = t("in")
    loop = Loop(name="l", body=[inner])
    with_context(inner, loop)
    return [t("first"), loop]


def stranger() -> list[Any]:
    a = t("a")
    return [a, t("b", context=[a, t("stranger")])]


def stranger_before_later() -> list[Any]:
    a, b, c = t("a"), t("b"), t("c")
    return [a, with_context(b, a, t("stranger"), c), c]


def later_before_stranger() -> list[Any]:
    a, b, c = t("a"), t("b"), t("c")
    return [a, with_context(b, a, c, t("stranger")), c]


def duplicates_then_later() -> list[Any]:
    a, b, c = t("a"), t("b"), t("c")
    return [a, with_context(b, a, a, a, c), c]


def duplicates_fine() -> list[Any]:
    a = t("a")
    return [a, t("b", context=[a, a]), t("c", context=[a, a])]


def long_chain_last_names_later() -> list[Any]:
    steps = chain(30)
    steps[20].context.append(steps[25])
    return steps


def equal_stranger_in_a_chain() -> list[Any]:
    a, b = t("a"), t("b")
    twin = t("b")  # equal field for field, another object
    return [a, b, t("c", context=[a, b]), t("d", context=[a, twin])]


def shorter_than_the_one_before() -> list[Any]:
    a, b, c, d = t("a"), t("b"), t("c"), t("d")
    return [a, b, t("x", context=[a, b]), with_context(c, d), d]


def chain_changed_in_the_middle() -> list[Any]:
    steps = chain(30)
    steps[12].context[3] = steps[28]
    return steps


def long_chain() -> list[Any]:
    return chain(30)


def loop_body_names_later_top() -> list[Any]:
    b = t("b")
    return [Loop(name="l", body=[t("in", context=[b])]), b]


def loop_body_names_earlier_top() -> list[Any]:
    a = t("a")
    return [a, Loop(name="l", body=[t("in", context=[a])]), t("c", context=[a])]


def loop_context_names_later_top() -> list[Any]:
    b = t("b")
    return [Loop(name="l", body=[t("in")], context=[b]), b]


def loop_body_names_stranger() -> list[Any]:
    return [t("a"), Loop(name="l", body=[t("in", context=[t("stranger")])])]


def top_task_names_body_step() -> list[Any]:
    inner = t("in")
    return [Loop(name="l", body=[inner]), t("after", context=[inner])]


def graph_state_names_later_top() -> list[Any]:
    b = t("b")
    graph = Graph(
        name="g",
        start="s",
        states={"s": t("s", context=[b])},
        edges=[Edge("s", Graph.END)],
    )
    return [graph, b]


def graph_states_see_each_other() -> list[Any]:
    a = t("a")
    s1 = t("s1")
    s2 = t("s2", context=[s1, a])
    with_context(s1, s2)
    graph = Graph(
        name="g",
        start="s1",
        states={"s1": s1, "s2": s2},
        edges=[Edge("s1", "s2"), Edge("s2", Graph.END)],
    )
    return [a, graph, t("after", context=[graph, a])]


def nested_ensemble_chain() -> list[Any]:
    a = t("a")
    inner = Ensemble(tasks=chain(3))
    return [a, inner, t("after", context=[inner, a])]


def for_each_names_earlier() -> list[Any]:
    a = t("a")
    return [a, t("each", for_each="docs", context=[a])]


def for_each_names_later() -> list[Any]:
    a, b = t("each", for_each="docs"), t("b")
    return [with_context(a, b), b]


def same_task_twice_top() -> list[Any]:
    a = t("a")
    return [a, a]


def same_task_top_and_body() -> list[Any]:
    a = t("a")
    return [a, Loop(name="l", body=[a])]


LATER = "context must come from an earlier task"
ITSELF = (
    "has itself as context; a step cannot use its own output as its context: remove it from "
    "its context list"
)
UNSEEN = (
    "context names an earlier step of the same body, another state of the same graph, or an "
    "earlier step outside it"
)
Verdict = tuple[type[Exception], str] | None
SELF_CASES: list[tuple[str, Callable[[], list[Any]], Verdict]] = [  # one rule, every process
    ("itself", itself, (ValueError, f"task 2 ('a') {ITSELF}")),
    ("a loop naming itself", loop_names_itself, (ValueError, f"task 2 ('l') {ITSELF}")),
    (
        "a body step naming itself",
        body_step_names_itself,
        (ConfigurationError, f"Loop 'l' body: step 'in' {ITSELF}"),
    ),
    (
        "a graph state naming itself",
        graph_state_names_itself,
        (ConfigurationError, f"Graph 'g': step 's' {ITSELF}"),
    ),
]

CASES: list[tuple[str, Callable[[], list[Any]], Verdict]] = [
    ("a chain", long_chain, None),
    (
        "a later task",
        later_task,
        (ValueError, f"task 1 ('a') has context task 'b', which runs later (task 2); {LATER}"),
    ),
    *SELF_CASES,
    (
        "a stranger, then itself",
        stranger_then_itself,
        (
            ValueError,
            "task 2 ('a') has context task 'stranger', which is not in this ensemble's tasks",
        ),
    ),
    (
        "a body step naming a later body step",
        body_step_names_later_body_step,
        (
            ConfigurationError,
            f"Loop 'l' body: step 'in' has context 'later', which runs later in the body; {UNSEEN}",
        ),
    ),
    (
        "a body step naming its loop",
        body_step_names_its_loop,
        (
            ConfigurationError,
            f"Loop 'l' body: step 'in' has context 'l', which it cannot see; {UNSEEN}",
        ),
    ),
    (
        "a stranger",
        stranger,
        (
            ValueError,
            "task 2 ('b') has context task 'stranger', which is not in this ensemble's tasks",
        ),
    ),
    (
        "a stranger, then a later task",
        stranger_before_later,
        (
            ValueError,
            "task 2 ('b') has context task 'stranger', which is not in this ensemble's tasks",
        ),
    ),
    (
        "a later task, then a stranger",
        later_before_stranger,
        (ValueError, f"task 2 ('b') has context task 'c', which runs later (task 3); {LATER}"),
    ),
    (
        "duplicates, then a later task",
        duplicates_then_later,
        (ValueError, f"task 2 ('b') has context task 'c', which runs later (task 3); {LATER}"),
    ),
    ("duplicates of an earlier task", duplicates_fine, None),
    (
        "an equal stranger where the task before named the real one",
        equal_stranger_in_a_chain,
        (
            ValueError,
            "task 4 ('d') has context task 'b', which is not in this ensemble's tasks",
        ),
    ),
    (
        "a context shorter than the task before's",
        shorter_than_the_one_before,
        (ValueError, f"task 4 ('c') has context task 'd', which runs later (task 5); {LATER}"),
    ),
    (
        "a chain with a later task in the middle of a context",
        chain_changed_in_the_middle,
        (
            ValueError,
            f"task 13 ('t12') has context task 't28', which runs later (task 29); {LATER}",
        ),
    ),
    (
        "a long chain, one naming a later task",
        long_chain_last_names_later,
        (
            ValueError,
            f"task 21 ('t20') has context task 't25', which runs later (task 26); {LATER}",
        ),
    ),
    (
        "a loop body naming a later task",
        loop_body_names_later_top,
        (ValueError, f"task 1 ('l') has context task 'b', which runs later (task 2); {LATER}"),
    ),
    ("a loop body naming an earlier task", loop_body_names_earlier_top, None),
    (
        "a loop's context naming a later task",
        loop_context_names_later_top,
        (ValueError, f"task 1 ('l') has context task 'b', which runs later (task 2); {LATER}"),
    ),
    (
        "a loop body naming a stranger",
        loop_body_names_stranger,
        (
            ConfigurationError,
            f"Loop 'l' body: step 'in' has context 'stranger', which it cannot see; {UNSEEN}",
        ),
    ),
    (
        "a task naming a step inside a loop",
        top_task_names_body_step,
        (
            ValueError,
            "task 2 ('after') has context task 'in', which is not in this ensemble's tasks",
        ),
    ),
    (
        "a graph state naming a later task",
        graph_state_names_later_top,
        (ValueError, f"task 1 ('g') has context task 'b', which runs later (task 2); {LATER}"),
    ),
    ("graph states naming each other", graph_states_see_each_other, None),
    ("a nested ensemble", nested_ensemble_chain, None),
    ("a for_each task naming an earlier task", for_each_names_earlier, None),
    (
        "a for_each task naming a later task",
        for_each_names_later,
        (ValueError, f"task 1 ('each') has context task 'b', which runs later (task 2); {LATER}"),
    ),
    (
        "a task twice",
        same_task_twice_top,
        (
            ConfigurationError,
            "the task 'a' appears twice in this ensemble; a step object runs in one place: "
            "build another one for the other place",
        ),
    ),
    (
        "a task at the top and in a body",
        same_task_top_and_body,
        (
            ConfigurationError,
            "the task 'a' appears twice in this ensemble; a step object runs in one place: "
            "build another one for the other place",
        ),
    ),
]


@pytest.mark.parametrize(("build", "verdict"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_sequential_check_gives_the_same_verdict_on_tricky_shapes(
    build: Callable[[], list[Any]], verdict: Verdict
) -> None:
    steps = build()
    if verdict is None:
        check_structure(steps, Workflow.SEQUENTIAL)
        return
    kind, message = verdict
    with pytest.raises(Exception) as caught:
        check_structure(steps, Workflow.SEQUENTIAL)
    assert type(caught.value) is kind
    assert str(caught.value) == message


def test_a_context_list_changed_after_a_good_check_is_checked_again() -> None:
    steps = chain(5)
    check_structure(steps, Workflow.SEQUENTIAL)
    steps[1].context.append(steps[3])
    with pytest.raises(
        ValueError, match=r"task 2 \('t1'\) has context task 't3', which runs later"
    ):
        check_structure(steps, Workflow.SEQUENTIAL)
    steps[1].context.pop()
    check_structure(steps, Workflow.SEQUENTIAL)


def reversed_chain() -> list[Any]:
    return chain(30)[::-1]


def reversed_chain_with_a_cycle() -> list[Any]:
    steps = chain(20)
    steps[5].context.append(steps[15])
    return steps[::-1]


def reversed_chain_with_a_stranger() -> list[Any]:
    steps = chain(20)
    steps[7].context.append(t("stranger"))
    return steps[::-1]


def fewer_names_but_later_in_the_order() -> list[Any]:
    """``a`` names one step, which names three: fewest names first is not an order of work."""
    c, d, e = t("c"), t("d"), t("e")
    b = t("b", context=[c, d, e])
    return [t("a", context=[b]), b, c, d, e]


def a_cycle() -> list[Any]:
    a, b, c = t("a"), t("b"), t("c")
    return [t("first"), with_context(a, c), with_context(b, a), with_context(c, b)]


def a_cycle_after_a_chain() -> list[Any]:
    steps = chain(20)
    steps[5].context.append(steps[15])
    return steps


def parallel_stranger_after_a_cycle() -> list[Any]:
    a, b = t("a"), t("b")
    return [with_context(a, b), with_context(b, a), t("c", context=[t("stranger")])]


def loop_waiting_for_a_later_task() -> list[Any]:
    b = t("b")
    return [Loop(name="l", body=[t("in", context=[b])]), b]


def loop_and_task_waiting_for_each_other() -> list[Any]:
    inner = t("in")
    loop = Loop(name="l", body=[inner])
    b = t("b", context=[loop])
    inner.context = [b]
    return [loop, b]


CYCLE = "(each needs the next one's output); remove one of these context links"
PARALLEL_CASES: list[tuple[str, Callable[[], list[Any]], Verdict]] = [
    ("a chain", long_chain, None),
    ("a chain listed backwards", reversed_chain, None),
    (
        "a chain listed backwards with a cycle",
        reversed_chain_with_a_cycle,
        (ValueError, f"the tasks' context forms a cycle: 't5' -> 't15' -> 't5' {CYCLE}"),
    ),
    (
        "a chain listed backwards with a stranger",
        reversed_chain_with_a_stranger,
        (
            ValueError,
            "task 13 ('t7') has context task 'stranger', which is not in this ensemble's tasks",
        ),
    ),
    ("fewer names but later in the order", fewer_names_but_later_in_the_order, None),
    *SELF_CASES,
    ("a stranger, then itself", stranger_then_itself, (ValueError, f"task 2 ('a') {ITSELF}")),
    (
        "a body step naming its loop",
        body_step_names_its_loop,
        (
            ConfigurationError,
            f"Loop 'l' body: step 'in' has context 'l', which it cannot see; {UNSEEN}",
        ),
    ),
    ("duplicates of an earlier task", duplicates_fine, None),
    (
        "an equal stranger",
        equal_stranger_in_a_chain,
        (ValueError, "task 4 ('d') has context task 'b', which is not in this ensemble's tasks"),
    ),
    (
        "a stranger",
        stranger,
        (
            ValueError,
            "task 2 ('b') has context task 'stranger', which is not in this ensemble's tasks",
        ),
    ),
    (
        "a cycle",
        a_cycle,
        (ValueError, f"the tasks' context forms a cycle: 'a' -> 'c' -> 'b' -> 'a' {CYCLE}"),
    ),
    (
        "a cycle in a chain",
        a_cycle_after_a_chain,
        (ValueError, f"the tasks' context forms a cycle: 't5' -> 't15' -> 't5' {CYCLE}"),
    ),
    (
        "a stranger after a cycle",
        parallel_stranger_after_a_cycle,
        (
            ValueError,
            "task 3 ('c') has context task 'stranger', which is not in this ensemble's tasks",
        ),
    ),
    ("a loop body waiting for a later task", loop_waiting_for_a_later_task, None),
    (
        "a loop and a task waiting for each other",
        loop_and_task_waiting_for_each_other,
        (ValueError, f"the tasks' context forms a cycle: 'l' -> 'b' -> 'l' {CYCLE}"),
    ),
    (
        "a loop body naming a stranger",
        loop_body_names_stranger,
        (
            ConfigurationError,
            f"Loop 'l' body: step 'in' has context 'stranger', which it cannot see; {UNSEEN}",
        ),
    ),
    ("graph states naming each other", graph_states_see_each_other, None),
    ("a nested ensemble", nested_ensemble_chain, None),
    ("a for_each task naming a later task", for_each_names_later, None),
    (
        "a task twice",
        same_task_twice_top,
        (
            ConfigurationError,
            "the task 'a' appears twice in this ensemble; a step object runs in one place: "
            "build another one for the other place",
        ),
    ),
]


@pytest.mark.parametrize(
    ("build", "verdict"), [c[1:] for c in PARALLEL_CASES], ids=[c[0] for c in PARALLEL_CASES]
)
def test_the_parallel_check_gives_the_same_verdict_on_tricky_shapes(
    build: Callable[[], list[Any]], verdict: Verdict
) -> None:
    steps = build()
    if verdict is None:
        check_structure(steps, Workflow.PARALLEL)
        return
    kind, message = verdict
    with pytest.raises(Exception) as caught:
        check_structure(steps, Workflow.PARALLEL)
    assert type(caught.value) is kind
    assert str(caught.value) == message
