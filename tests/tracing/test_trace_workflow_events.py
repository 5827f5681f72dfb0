"""Whatever a workflow emits lands in the trace: delegations of the hierarchical manager with
what each worker answered, and events with no place of their own (guardrail checks) as
records under their task."""

from __future__ import annotations

from typing import Any

from agentensemble import (
    Agent,
    Ensemble,
    ExecutionTrace,
    GuardrailResult,
    Task,
    TaskOutput,
    Workflow,
)
from agentensemble.testing import ScriptedChatModel, tool_call


def delegate(role: str, instructions: str) -> Any:
    return tool_call("delegate_task", {"agent_role": role, "instructions": instructions})


def test_delegations_are_traced_with_their_instructions_and_answers() -> None:
    manager = ScriptedChatModel(
        [
            delegate("Researcher", "List three facts about tides"),
            delegate("Ghost", "Do something"),  # refused by the tool: no such worker
            "Final report: tides follow the moon.",
        ]
    )
    researcher = Agent(role="Researcher", goal="Find facts", llm=ScriptedChatModel(["moon, sun"]))
    ensemble = Ensemble(
        tasks=[Task(description="Write a short report on tides")],
        agents=[researcher],
        workflow=Workflow.HIERARCHICAL,
        manager_llm=manager,
    )

    output = ensemble.run()

    trace = output.trace
    assert trace is not None and trace.workflow == "hierarchical"
    (task,) = trace.tasks
    (delegation,) = task.delegations
    assert (delegation.from_role, delegation.to_role, delegation.depth) == (
        "Manager",
        "Researcher",
        0,
    )
    assert delegation.instructions == "List three facts about tides"
    assert delegation.output == "moon, sun" and delegation.error is None
    assert delegation.duration_seconds is not None
    refused = [c for c in task.tool_calls if "Ghost" in c.arguments]
    assert len(refused) == 1 and refused[0].is_success is False
    # the worker's own model turn is in the task too, under its own role
    assert "Researcher" in {turn.agent_role for turn in task.model_turns}
    assert ExecutionTrace.from_json(trace.to_json()) == trace


def test_guardrail_checks_land_under_their_task() -> None:
    def short_enough(output: TaskOutput) -> GuardrailResult:
        if len(output.raw.split()) > 3:
            return GuardrailResult.failure("use at most 3 words")
        return GuardrailResult.success()

    model = ScriptedChatModel(["far too many words here", "Short answer."])
    task = Task(description="Answer", output_guardrails=[short_enough])

    output = Ensemble(tasks=[task], llm=model).run()

    checks = output.trace.tasks[0].guardrails  # type: ignore[union-attr]
    assert [(c.kind, c.passed, c.message, c.attempt) for c in checks] == [
        ("output", False, "use at most 3 words", 1),
        ("output", True, None, 2),
    ]
