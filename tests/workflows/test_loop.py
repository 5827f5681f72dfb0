"""Loop: a body run again and again until ``until`` holds or ``max_iterations`` is reached."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from agentensemble import (
    Agent,
    Ensemble,
    EnsembleEvent,
    ExitReason,
    Loop,
    LoopIterationCompleted,
    LoopMaxIterationsError,
    LoopState,
    Task,
    TaskCompleted,
    TaskExecutionError,
    Workflow,
    tool,
)
from agentensemble.testing import ScriptedChatModel, tool_call
from agentensemble.workflows.task_step import FEEDBACK_ON_IT, PREVIOUS_ANSWER


class Verdict(BaseModel):
    approved: bool
    remarks: str


def verdict(approved: bool, remarks: str = "fine") -> str:
    return Verdict(approved=approved, remarks=remarks).model_dump_json()


class Recorder:
    def __init__(self) -> None:
        self.events: list[EnsembleEvent] = []

    def on_event(self, event: EnsembleEvent) -> None:
        self.events.append(event)


def writer_critic(model: ScriptedChatModel, **loop: Any) -> tuple[Loop, Task, Task]:
    writer = Task(name="write", description="Write about {topic}")
    critic = Task(name="critique", description="Critique", context=[writer], output_type=Verdict)
    settings: dict[str, Any] = {
        "until": lambda state: state.outputs["critique"].parsed.approved,
        "max_iterations": 3,
        **loop,
    }
    return Loop(name="review", body=[writer, critic], **settings), writer, critic


def test_the_loop_stops_when_until_holds_and_every_iteration_is_in_the_outputs() -> None:
    model = ScriptedChatModel(["d1", verdict(False, "short"), "d2", verdict(True), "published"])
    loop, writer, _ = writer_critic(model)
    publish = Task(name="publish", description="Publish", context=[loop])

    out = Ensemble(tasks=[loop, publish], llm=model).run({"topic": "owls"})

    assert [o.raw for o in out.task_outputs][:-1] == [
        "d1",
        verdict(False, "short"),
        "d2",
        verdict(True),
    ]
    result = out.loops["review"]
    assert (result.iterations, result.stopped_by) == (2, "until")
    assert [sorted(h) for h in result.history] == [["critique", "write"]] * 2
    assert result.history[1]["write"].raw == "d2"
    # context=[loop] gets the last iteration's last output
    assert verdict(True) in model.requests[-1].last_user_content
    assert "d2" not in model.requests[-1].last_user_content
    assert out.output_for(writer) is not None


def test_feedback_shows_the_first_task_its_previous_answer_and_the_critique() -> None:
    model = ScriptedChatModel(["d1", verdict(False, "needs sources"), "d2", verdict(True)])
    loop, _, _ = writer_critic(model)
    Ensemble(tasks=[loop], llm=model).run({"topic": "owls"})

    first, second = model.requests[0].last_user_content, model.requests[2].last_user_content
    assert PREVIOUS_ANSWER not in first and "needs sources" not in first
    assert PREVIOUS_ANSWER in second and FEEDBACK_ON_IT in second
    assert second.index("d1") < second.index("needs sources") < second.index("## Task")


def test_without_feedback_no_earlier_iteration_reaches_the_first_task() -> None:
    model = ScriptedChatModel(["d1", verdict(False, "needs sources"), "d2", verdict(True)])
    loop, _, _ = writer_critic(model, feedback=False)
    Ensemble(tasks=[loop], llm=model).run({"topic": "owls"})
    second = model.requests[2].last_user_content
    assert "d1" not in second and "needs sources" not in second


@pytest.mark.parametrize(
    ("settings", "iterations"),
    [
        ({"max_iterations": 1}, 1),
        ({"max_iterations": 3}, 3),
        ({"max_iterations": 4, "until": lambda s: s.iteration == 2}, 2),
        ({"max_iterations": 4, "until": lambda s: len(s.history) == 3}, 3),
    ],
)
def test_counting(settings: dict[str, Any], iterations: int) -> None:
    calls: list[int] = []
    body = Task(
        name="count", description="count", handler=lambda ctx: str(len(calls.append(1) or calls))
    )
    out = Ensemble(tasks=[Loop(name="l", body=[body], **settings)]).run()
    assert out.loops["l"].iterations == iterations == len(out.task_outputs)
    expected = "until" if "until" in settings else "max_iterations"
    assert out.loops["l"].stopped_by == expected


def test_return_last_keeps_the_last_iteration_when_until_never_holds() -> None:
    body = Task(name="t", description="t", handler=lambda ctx: "again")
    after = Task(name="after", description="after", context=[], handler=lambda ctx: "done")
    loop = Loop(name="l", body=[body], until=lambda s: False, max_iterations=2)
    out = Ensemble(tasks=[loop, after]).run()
    assert out.loops["l"].stopped_by == "max_iterations"
    assert [o.raw for o in out.task_outputs] == ["again", "again", "done"]


def test_fail_raises_with_every_completed_output() -> None:
    first = Task(name="first", description="first", handler=lambda ctx: "kept")
    body = Task(name="t", description="t", handler=lambda ctx: "not yet")
    loop = Loop(
        name="l", body=[body], until=lambda s: False, max_iterations=2, on_max_iterations="fail"
    )
    with pytest.raises(LoopMaxIterationsError) as caught:
        Ensemble(tasks=[first, loop]).run()
    error = caught.value
    assert isinstance(error, TaskExecutionError)
    assert (error.loop_name, error.iterations, error.task) == ("l", 2, loop)
    assert [o.raw for o in error.completed_outputs] == ["kept", "not yet", "not yet"]
    assert error.trace is not None


def test_a_predicate_that_raises_fails_the_run_keeping_what_completed() -> None:
    body = Task(name="t", description="t", handler=lambda ctx: "out")

    def broken(state: LoopState) -> bool:
        raise KeyError("critique")

    with pytest.raises(TaskExecutionError) as caught:
        Ensemble(tasks=[Loop(name="l", body=[body], until=broken)]).run()
    assert "until" in str(caught.value) and "KeyError" in str(caught.value)
    assert isinstance(caught.value.__cause__, KeyError)
    assert [o.raw for o in caught.value.completed_outputs] == ["out"]


def test_a_failing_body_task_names_itself_and_keeps_earlier_iterations() -> None:
    runs: list[int] = []

    def flaky(ctx: Any) -> str:
        runs.append(1)
        if len(runs) == 2:
            raise ValueError("boom")
        return "ok"

    body = Task(name="flaky", description="flaky", handler=flaky)
    with pytest.raises(TaskExecutionError) as caught:
        Ensemble(tasks=[Loop(name="l", body=[body], max_iterations=3)]).run()
    assert caught.value.task is body
    assert "boom" in str(caught.value)
    assert [o.raw for o in caught.value.completed_outputs] == ["ok"]


def test_events_each_iteration_after_its_tasks_and_before_the_next() -> None:
    recorder = Recorder()
    a = Task(name="a", description="a", handler=lambda ctx: "A")
    b = Task(name="b", description="b", handler=lambda ctx: "B")
    Ensemble(tasks=[Loop(name="l", body=[a, b], max_iterations=2)], listeners=[recorder]).run()
    kinds = [
        type(e).__name__
        for e in recorder.events
        if isinstance(e, (TaskCompleted, LoopIterationCompleted))
    ]
    assert kinds == ["TaskCompleted", "TaskCompleted", "LoopIterationCompleted"] * 2
    iterations = [e for e in recorder.events if isinstance(e, LoopIterationCompleted)]
    assert [(e.loop_name, e.iteration, sorted(e.outputs)) for e in iterations] == [
        ("l", 1, ["a", "b"]),
        ("l", 2, ["a", "b"]),
    ]
    assert [e.stopped_by for e in iterations] == [None, "max_iterations"]
    indices = [e.task_indices for e in iterations]
    assert indices == [(1, 2), (3, 4)]
    assert all(e.run_id for e in iterations)


def test_nested_loops_run_their_inner_body_each_outer_iteration() -> None:
    inner = Loop(
        name="inner",
        body=[Task(name="i", description="i", handler=lambda ctx: "i")],
        max_iterations=2,
    )
    outer = Loop(
        name="outer",
        body=[inner, Task(name="o", description="o", handler=lambda c: "o")],
        max_iterations=2,
    )
    out = Ensemble(tasks=[outer]).run()
    assert [o.raw for o in out.task_outputs] == ["i", "i", "o", "i", "i", "o"]
    assert out.loops["outer"].iterations == 2
    assert out.loops["outer"].history[0]["inner"].raw == "i"


def test_context_inside_the_body_is_the_same_iteration_output() -> None:
    count = iter(range(1, 10))
    a = Task(name="a", description="a", handler=lambda ctx: f"a{next(count)}")
    b = Task(
        name="b",
        description="b",
        context=[a],
        handler=lambda ctx: "saw " + ",".join(o.raw for o in ctx.context_outputs),
    )
    out = Ensemble(tasks=[Loop(name="l", body=[a, b], max_iterations=2, feedback=False)]).run()
    assert [o.raw for o in out.task_outputs] == ["a1", "saw a1", "a2", "saw a2"]


def test_a_loop_context_hands_its_output_to_the_first_body_task_in_parallel_too() -> None:
    for workflow in (Workflow.SEQUENTIAL, Workflow.PARALLEL):
        source = Task(name="source", description="s", handler=lambda ctx: "facts")
        first = Task(
            name="first",
            description="f",
            handler=lambda ctx: "|".join(o.raw for o in ctx.context_outputs) or "none",
        )
        loop = Loop(name="l", body=[first], max_iterations=1, context=[source])
        out = Ensemble(
            tasks=[loop, source] if workflow is Workflow.PARALLEL else [source, loop],
            workflow=workflow,
        ).run()
        assert out.output_for(first) is not None and out.output_for(first).raw == "facts"  # type: ignore[union-attr]


def test_a_review_exit_early_inside_a_loop_stops_the_run_keeping_outputs() -> None:
    from agentensemble_review import Continue, ExitEarly, Review, ScriptedReviewHandler

    reviewer = ScriptedReviewHandler([Continue(), ExitEarly(reason="enough")])
    body = Task(name="t", description="t", handler=lambda ctx: "draft", review=Review.required())
    after = Task(name="after", description="after", handler=lambda ctx: "never")
    out = Ensemble(
        tasks=[Loop(name="l", body=[body], max_iterations=5), after], review_handler=reviewer
    ).run()
    assert out.exit_reason is ExitReason.USER_EXIT_EARLY
    assert [o.raw for o in out.task_outputs] == ["draft", "draft"]
    assert len(reviewer.requests) == 2  # asked again each iteration


def test_tools_typed_output_and_the_trace_see_every_iteration() -> None:
    used: list[str] = []

    @tool
    def look(word: str) -> str:
        """Look a word up."""
        used.append(word)
        return word.upper()

    model = ScriptedChatModel(
        [
            tool_call("look", {"word": "a"}),
            verdict(False),
            tool_call("look", {"word": "b"}),
            verdict(True),
        ]
    )
    agent = Agent(role="Critic", goal="judge", tools=[look], llm=model)
    critic = Task(name="critique", description="judge", agent=agent, output_type=Verdict)
    loop = Loop(
        name="l", body=[critic], until=lambda s: s.last is not None and s.last.parsed.approved
    )
    out = Ensemble(tasks=[loop]).run()
    assert used == ["a", "b"]
    assert [o.parsed.approved for o in out.task_outputs] == [False, True]
    assert out.trace is not None
    assert [t.index for t in out.trace.tasks] == [1, 2]
    assert out.total_tool_calls == 2


def test_after_last_task_reviews_the_last_body_task_of_a_final_loop_each_iteration() -> None:
    from agentensemble_review import Continue, ReviewPolicy, ScriptedReviewHandler

    reviewer = ScriptedReviewHandler([Continue(), Continue()])
    a = Task(name="a", description="draft", handler=lambda ctx: "A")
    b = Task(name="b", description="check", handler=lambda ctx: "B")
    Ensemble(
        tasks=[Loop(name="l", body=[a, b], max_iterations=2)],
        review_handler=reviewer,
        review_policy=ReviewPolicy.AFTER_LAST_TASK,
    ).run()
    assert [r.task_description for r in reviewer.requests] == ["check", "check"]


def test_task_started_says_where_each_task_run_sits() -> None:
    recorder = Recorder()
    inner = Loop(
        name="inner",
        body=[Task(name="i", description="i", handler=lambda c: "i")],
        max_iterations=1,
    )
    outer = Loop(name="outer", body=[inner], max_iterations=2)
    Ensemble(tasks=[outer], listeners=[recorder]).run()
    started = [e.within for e in recorder.events if type(e).__name__ == "TaskStarted"]
    assert started == [
        ("loop:outer:1", "loop:inner:1"),
        ("loop:outer:2", "loop:inner:1"),
    ]
    ends = [e for e in recorder.events if isinstance(e, LoopIterationCompleted)]
    assert [(e.loop_name, e.within) for e in ends] == [
        ("inner", ("loop:outer:1",)),
        ("outer", ()),
        ("inner", ("loop:outer:2",)),
        ("outer", ()),
    ]


def test_an_output_guardrail_checks_every_iteration_and_its_correction_is_kept() -> None:
    from agentensemble import GuardrailResult

    def short_enough(output: Any) -> GuardrailResult:
        if len(output.raw) > 10:
            return GuardrailResult.failure("at most 10 characters")
        return GuardrailResult.success()

    model = ScriptedChatModel(["a very long first draft", "draft 1", "draft 2"])
    body = Task(name="write", description="write", output_guardrails=[short_enough])
    out = Ensemble(tasks=[Loop(name="l", body=[body], max_iterations=2)], llm=model).run()
    assert [o.raw for o in out.task_outputs] == ["draft 1", "draft 2"]
    assert "at most 10 characters" in model.requests[1].last_user_content


def test_loop_results_survive_saving_the_output_as_json() -> None:
    from agentensemble import EnsembleOutput

    body = Task(name="a", description="a", handler=lambda ctx: "A")
    out = Ensemble(tasks=[Loop(name="l", body=[body], max_iterations=2)]).run()
    back = EnsembleOutput.model_validate_json(out.model_dump_json())
    assert back.loops["l"].iterations == 2
    assert back.loops["l"].history[1]["a"].raw == "A"
    assert out.trace is not None
    assert [e.type for e in out.trace.events] == ["LoopIterationCompleted"] * 2
    assert out.trace.events[1].fields["stopped_by"] == "max_iterations"
