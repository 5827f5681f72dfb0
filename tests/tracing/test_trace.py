"""The execution trace: what a run did, task by task, built from events; capture levels,
redaction, exact JSON round trips and the trace of a failed run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentensemble import (
    Agent,
    Ensemble,
    ExecutionTrace,
    Task,
    TaskExecutionError,
    tool,
)
from agentensemble.logging import register_secret
from agentensemble.testing import ScriptedChatModel, tool_call
from agentensemble_review import Continue, Edit, Review, ScriptedReviewHandler

SECRET = "sk-trace-test-0123456789abcdef"


@tool
def lookup(city: str) -> str:
    """Look up the weather of a city."""
    return f"Sunny in {city}"


@tool(requires_approval=True)
def send(to: str) -> str:
    """Send the report."""
    return f"sent to {to}"


def weather_ensemble(model: ScriptedChatModel, **settings: object) -> Ensemble:
    agent = Agent(role="Forecaster", goal="Forecast for {city}", tools=[lookup, send])
    task = Task(description="Forecast {city}", expected_output="One line", agent=agent, name="fc")
    return Ensemble(tasks=[task], llm=model, **settings)  # type: ignore[arg-type]


def script() -> ScriptedChatModel:
    return ScriptedChatModel(
        [
            tool_call("lookup", {"city": "Oslo"}),
            tool_call("send", {"to": "ann"}),
            "Sunny in Oslo, report sent",
        ]
    )


def test_the_trace_holds_prompts_turns_tool_calls_reviews_and_the_output() -> None:
    model = script()
    reviewer = ScriptedReviewHandler([Edit('{"to": "bob"}')])
    output = weather_ensemble(model, review_handler=reviewer).run({"city": "Oslo"})

    trace = output.trace
    assert trace is not None
    assert (trace.schema_version, trace.run_id, trace.status) == (2, output.run_id, "completed")
    assert trace.inputs == {"city": "Oslo"} and trace.workflow == "sequential"
    assert trace.started_at <= trace.ended_at  # type: ignore[operator]
    (task,) = trace.tasks
    first_request = model.requests[0].messages
    assert task.system_prompt == first_request[0]["content"]
    assert task.user_prompt == first_request[1]["content"]
    assert (task.agent_role, task.task_name, task.model, task.status) == (
        "Forecaster",
        "fc",
        "scripted",
        "completed",
    )
    assert [t.tool_calls[0].name for t in task.model_turns[:2]] == ["lookup", "send"]
    assert task.model_turns[2].content == "Sunny in Oslo, report sent"
    assert all(t.messages is None and t.message_count >= 2 for t in task.model_turns)
    assert sum(t.usage.total_tokens for t in task.model_turns) == output.usage.total_tokens
    looked, sent = task.tool_calls
    assert (looked.name, looked.arguments, looked.output, looked.is_success) == (
        "lookup",
        '{"city": "Oslo"}',
        "Sunny in Oslo",
        True,
    )
    assert sent.output == "sent to bob"  # the reviewer's edit is what ran
    assert json.loads(sent.arguments) == {"to": "bob"}
    assert sent.model_arguments == '{"to": "ann"}'
    (review,) = task.reviews
    assert (review.timing, review.tool_name, review.decision) == (
        "during_execution",
        "send",
        "edit",
    )
    assert review.decided_by == "ScriptedReviewHandler"
    assert review.wait_seconds is not None and review.wait_seconds >= 0
    assert task.output == output.raw
    assert task.metrics.model_seconds > 0 and task.metrics.retries == 0
    assert output.task_outputs[0].metrics == task.metrics


def test_capture_off_keeps_no_trace_but_still_measures_each_task() -> None:
    output = weather_ensemble(
        script(), review_handler=ScriptedReviewHandler([Continue()]), capture="off"
    ).run({"city": "Oslo"})

    assert output.trace is None
    metrics = output.task_outputs[0].metrics
    assert metrics.model_seconds > 0 and metrics.tool_seconds > 0


def test_capture_full_keeps_every_message_of_every_turn() -> None:
    model = script()
    output = weather_ensemble(
        model, review_handler=ScriptedReviewHandler([Continue()]), capture="full"
    ).run({"city": "Oslo"})

    turns = output.trace.tasks[0].model_turns  # type: ignore[union-attr]
    assert [t.messages for t in turns] == [r.messages for r in model.requests]


def test_secrets_never_enter_a_trace() -> None:
    register_secret(SECRET)

    @tool
    def leak(city: str) -> str:
        """A tool that echoes a key."""
        return f"key={SECRET}"

    model = ScriptedChatModel([tool_call("leak", {"city": SECRET}), f"done {SECRET}"])
    agent = Agent(role="A", goal="g", tools=[leak])
    ensemble = Ensemble(
        tasks=[Task(description="Use {key}", agent=agent)], llm=model, capture="full"
    )

    output = ensemble.run({"key": SECRET})

    text = output.trace.to_json()  # type: ignore[union-attr]
    assert SECRET not in text
    assert "***" in text


def test_to_json_and_from_json_round_trip_exactly(tmp_path: Path) -> None:
    output = weather_ensemble(
        script(), review_handler=ScriptedReviewHandler([Continue()]), capture="full"
    ).run({"city": "Oslo"})
    trace = output.trace
    assert trace is not None

    assert ExecutionTrace.from_json(trace.to_json()) == trace
    saved = trace.save(tmp_path / "trace.json")
    assert ExecutionTrace.from_json(saved.read_text(encoding="utf-8")) == trace
    assert json.loads(saved.read_text(encoding="utf-8"))["run_id"] == output.run_id


def test_a_failed_run_carries_the_trace_up_to_the_failure() -> None:
    model = ScriptedChatModel(["first answer"])  # the second task finds the script empty
    tasks = [Task(description="One"), Task(description="Two")]
    ensemble = Ensemble(tasks=tasks, llm=model)

    with pytest.raises(TaskExecutionError) as caught:
        ensemble.run()

    trace = caught.value.trace
    assert isinstance(trace, ExecutionTrace)
    assert (trace.status, trace.run_id) == ("failed", caught.value.run_id)
    first, second = trace.tasks
    assert (first.status, first.output) == ("completed", "first answer")
    assert second.status == "failed" and second.error is not None
    assert second.error.type == "ScriptExhaustedError"
    (turn,) = second.model_turns
    assert turn.error is not None and turn.error.type == "ScriptExhaustedError"
    assert trace.error is not None and trace.error.type == "TaskExecutionError"


def test_reviews_before_a_task_belong_to_that_task() -> None:
    reviewer = ScriptedReviewHandler([Edit("Say two, loudly")])
    tasks = [
        Task(description="Say one"),
        Task(description="Say two", before_review=Review.required()),
    ]
    output = Ensemble(
        tasks=tasks, llm=ScriptedChatModel(["one", "TWO"]), review_handler=reviewer
    ).run()

    first, second = output.trace.tasks  # type: ignore[union-attr]
    assert first.reviews == []
    (review,) = second.reviews
    assert (review.timing, review.decision) == ("before_execution", "edit")
    assert "Say two, loudly" in (second.user_prompt or "")
    assert output.task_outputs[1].metrics.review_wait_seconds == second.metrics.review_wait_seconds


def test_odd_values_from_a_provider_never_break_the_run_or_its_trace() -> None:
    from agentensemble import ChatResponse
    from agentensemble.testing import FunctionChatModel

    odd = ChatResponse(content="fine", finish_reason=7, model=["not", "a", "name"])  # type: ignore[arg-type]
    output = Ensemble(
        tasks=[Task(description="Answer")], llm=FunctionChatModel(lambda m, t: odd)
    ).run()

    assert output.raw == "fine"
    assert output.trace is not None
    assert output.trace.tasks[0].model_turns[0].finish_reason is None


def test_an_output_saved_as_json_loads_back_with_its_trace() -> None:
    from agentensemble import EnsembleOutput

    output = weather_ensemble(script(), review_handler=ScriptedReviewHandler([Continue()])).run(
        {"city": "Oslo"}
    )

    loaded = EnsembleOutput.model_validate_json(output.model_dump_json())

    assert isinstance(loaded.trace, ExecutionTrace)
    assert loaded.trace == output.trace


def test_importing_the_package_leaves_the_trace_model_for_the_first_run() -> None:
    import subprocess
    import sys

    code = "import sys, agentensemble; print('agentensemble.tracing' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "False"
