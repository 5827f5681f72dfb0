"""Workflow.HIERARCHICAL: a manager delegates with delegate_task; delegations are task outputs."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import ValidationError

from agentensemble import (
    Agent,
    ConfigurationError,
    DelegationCompleted,
    DelegationFailed,
    DelegationStarted,
    Ensemble,
    EnsembleEvent,
    ExitReason,
    Task,
    TaskExecutionError,
    Workflow,
    tool,
)
from agentensemble.testing import FunctionChatModel, ScriptedChatModel, tool_call, tool_calls
from agentensemble_review import (
    AutoApproveReviewHandler,
    Edit,
    Review,
    ReviewPolicy,
    ScriptedReviewHandler,
)

pytestmark = pytest.mark.anyio


def delegate(role: str, instructions: str) -> Any:
    return tool_call("delegate_task", {"agent_role": role, "instructions": instructions})


class Events:
    def __init__(self) -> None:
        self.seen: list[EnsembleEvent] = []

    def on_event(self, event: EnsembleEvent) -> None:
        self.seen.append(event)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.seen if isinstance(e, kind)]


def team(manager: Any, **settings: Any) -> tuple[Ensemble, ScriptedChatModel, ScriptedChatModel]:
    researcher_model = ScriptedChatModel()
    writer_model = ScriptedChatModel()
    researcher = Agent(role="Researcher", goal="Find facts", llm=researcher_model)
    writer = Agent(role="Writer", goal="Write well", llm=writer_model)
    task = Task(description="Write a short report on tides", expected_output="A report")
    ensemble = Ensemble(
        tasks=[task],
        agents=[researcher, writer],
        workflow=Workflow.HIERARCHICAL,
        manager_llm=manager,
        **settings,
    )
    return ensemble, researcher_model, writer_model


async def test_the_manager_delegates_then_answers_and_each_delegation_is_recorded() -> None:
    manager = ScriptedChatModel(
        [
            delegate("Researcher", "List three facts about tides"),
            delegate("Writer", "Write a report from: moon, sun, coasts"),
            "Final report: tides follow the moon.",
        ]
    )
    events = Events()
    ensemble, researcher_model, writer_model = team(manager, listeners=[events])
    researcher_model.add("moon, sun, coasts")
    writer_model.add("Tides follow the moon.")

    result = await ensemble.arun()

    assert result.raw == "Final report: tides follow the moon."
    assert [(o.agent_role, o.task_description, o.raw) for o in result.task_outputs] == [
        ("Researcher", "List three facts about tides", "moon, sun, coasts"),
        ("Writer", "Write a report from: moon, sun, coasts", "Tides follow the moon."),
    ]
    assert result.exit_reason is ExitReason.COMPLETED
    # the manager's one tool names the workers as an enum
    spec = manager.requests[0].tools[0]["function"]  # type: ignore[index]
    assert spec["name"] == "delegate_task"
    role = spec["parameters"]["properties"]["agent_role"]
    assert role["enum"] == ["Researcher", "Writer"]
    assert spec["parameters"]["required"] == ["agent_role", "instructions"]
    assert manager.requests[1].tool_results == ["moon, sun, coasts"]
    # workers run as themselves, on the instructions
    assert researcher_model.requests[0].messages[0]["content"].startswith("You are Researcher.")
    assert "List three facts about tides" in researcher_model.requests[0].last_user_content
    assert "Write a short report on tides" in manager.requests[0].last_user_content
    assert [(e.from_role, e.to_role) for e in events.of(DelegationStarted)] == [
        ("Manager", "Researcher"),
        ("Manager", "Writer"),
    ]
    assert [e.output.raw for e in events.of(DelegationCompleted)] == [
        "moon, sun, coasts",
        "Tides follow the moon.",
    ]
    assert result.usage.total_tokens > sum(o.usage.total_tokens for o in result.task_outputs)


async def test_an_unknown_role_is_an_error_the_manager_recovers_from() -> None:
    manager = ScriptedChatModel(
        [delegate("Astronomer", "Explain tides"), delegate("researcher", "Explain tides"), "ok"]
    )
    ensemble, researcher_model, _ = team(manager)
    researcher_model.add("the moon pulls")

    result = await ensemble.arun()

    error = manager.requests[1].tool_results[0]
    assert error.startswith("Error:") and "agent_role" in error and "Researcher" in error
    # roles are matched ignoring case, once past the enum
    assert [o.raw for o in result.task_outputs] == ["the moon pulls"]
    assert result.raw == "ok"


async def test_a_failing_worker_is_fed_back_and_the_run_goes_on() -> None:
    def broken(messages: list[dict[str, Any]], tools: Any) -> str:
        raise RuntimeError("worker model down")

    manager = ScriptedChatModel(
        [delegate("Researcher", "Find facts"), delegate("Writer", "Write anyway"), "done"]
    )
    events = Events()
    researcher = Agent(role="Researcher", goal="Find facts", llm=FunctionChatModel(broken))
    writer = Agent(role="Writer", goal="Write", llm=ScriptedChatModel(["a text"]))
    ensemble = Ensemble(
        tasks=[Task(description="Report")],
        agents=[researcher, writer],
        workflow=Workflow.HIERARCHICAL,
        llm=manager,
        listeners=[events],
    )

    result = await ensemble.arun()

    assert manager.requests[1].tool_results == [
        "Error: Researcher could not finish: RuntimeError: worker model down"
    ]
    assert [o.raw for o in result.task_outputs] == ["a text"]
    assert [e.to_role for e in events.of(DelegationFailed)] == ["Researcher"]


async def test_delegations_in_one_turn_run_concurrently_and_keep_the_order_asked() -> None:
    both_in = asyncio.Event()
    arrived: list[str] = []

    async def worker(messages: list[dict[str, Any]], tools: Any) -> str:
        who = "first" if "first" in str(messages[1]["content"]) else "second"
        arrived.append(who)
        if len(arrived) == 2:
            both_in.set()
        await asyncio.wait_for(both_in.wait(), 10.0)  # times out unless both run at once
        if who == "first":
            await asyncio.sleep(0.01)  # and the first one finishes last
        return f"{who} answer"

    shared = FunctionChatModel(worker)
    manager = ScriptedChatModel(
        [
            tool_calls(
                ("delegate_task", {"agent_role": "Researcher", "instructions": "first part"}),
                ("delegate_task", {"agent_role": "Writer", "instructions": "second part"}),
            ),
            "combined",
        ]
    )
    ensemble = Ensemble(
        tasks=[Task(description="Two parts")],
        agents=[
            Agent(role="Researcher", goal="g", llm=shared),
            Agent(role="Writer", goal="g", llm=shared),
        ],
        workflow=Workflow.HIERARCHICAL,
        llm=manager,
    )

    result = await ensemble.arun()

    assert [o.raw for o in result.task_outputs] == ["first answer", "second answer"]


async def test_manager_max_iterations_caps_its_delegations() -> None:
    manager = ScriptedChatModel(
        [delegate("Researcher", "one"), delegate("Researcher", "two"), "stopped"]
    )
    ensemble, researcher_model, _ = team(manager, manager_max_iterations=1)
    researcher_model.add("answer one")

    result = await ensemble.arun()

    assert [o.raw for o in result.task_outputs] == ["answer one"]
    assert "tool-call limit for this task (1)" in manager.requests[2].tool_results[0]


async def test_a_manager_failure_keeps_the_delegations_done() -> None:
    manager = ScriptedChatModel([delegate("Researcher", "facts")])  # then the script runs out
    ensemble, researcher_model, _ = team(manager)
    researcher_model.add("facts found")

    with pytest.raises(TaskExecutionError, match="The manager failed") as info:
        await ensemble.arun()

    assert [o.raw for o in info.value.completed_outputs] == ["facts found"]


async def test_the_final_answer_gets_the_last_review() -> None:
    manager = ScriptedChatModel([delegate("Writer", "write"), "draft answer"])
    reviewer = ScriptedReviewHandler([Edit(revised_output="approved answer")])
    ensemble, _, writer_model = team(
        manager, review_handler=reviewer, review_policy=ReviewPolicy.AFTER_LAST_TASK
    )
    writer_model.add("written")

    result = await ensemble.arun()

    assert result.raw == "approved answer"
    assert [r.output for r in reviewer.requests] == ["draft answer"]


@tool
def measure(place: str) -> str:
    """Measure the tide.

    Args:
        place: where
    """
    return f"2 m at {place}"


async def test_workers_use_their_own_tools_and_tasks_agents_are_workers_too() -> None:
    surveyor_model = ScriptedChatModel([tool_call("measure", {"place": "Brest"}), "2 m"])
    surveyor = Agent(role="Surveyor", goal="Measure", tools=[measure], llm=surveyor_model)
    manager = ScriptedChatModel([delegate("Surveyor", "Measure at Brest"), "Tide: 2 m"])
    task = Task(description="How high is the tide?", agent=surveyor)

    result = await Ensemble(tasks=[task], workflow=Workflow.HIERARCHICAL, llm=manager).arun()

    assert result.raw == "Tide: 2 m"
    (output,) = result.task_outputs
    assert [c.output for c in output.tool_calls] == ["2 m at Brest"]
    assert "Suggested worker: Surveyor" in manager.requests[0].last_user_content
    assert result.output_for(task) is None  # delegations are not the tasks themselves


def worker(role: str = "Researcher") -> Agent:
    return Agent(role=role, goal="g", llm=ScriptedChatModel())


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: Ensemble(
                tasks=[Task(description="t")],
                agents=[worker("manager")],
                workflow=Workflow.HIERARCHICAL,
            ),
            "worker role 'manager' is reserved",
        ),
        (
            lambda: Ensemble(
                tasks=[Task(description="t")],
                agents=[worker("Writer"), worker("writer ")],
                workflow=Workflow.HIERARCHICAL,
            ),
            "share the role 'Writer' / 'writer '",
        ),
        (
            lambda: Ensemble(
                tasks=[Task(description="t", handler=lambda ctx: "x")],
                agents=[worker()],
                workflow=Workflow.HIERARCHICAL,
            ),
            "handler tasks are not allowed",
        ),
        (
            lambda: Ensemble(
                tasks=[Task(description="t")],
                agents=[worker()],
                workflow=Workflow.HIERARCHICAL,
                manager_max_iterations=0,
            ),
            "manager_max_iterations",
        ),
        (
            lambda: Ensemble(tasks=[Task(description="t")], workflow=Workflow.HIERARCHICAL),
            "needs workers",
        ),
    ],
    ids=["manager role", "duplicate roles", "handler task", "no iterations", "no workers"],
)
def test_wrong_hierarchical_setups_fail_at_construction(build: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        build()


def test_a_manager_without_a_model_fails_before_any_call() -> None:
    model = ScriptedChatModel()
    ensemble = Ensemble(
        tasks=[Task(description="t")],
        agents=[Agent(role="Researcher", goal="g", llm=model)],
        workflow=Workflow.HIERARCHICAL,
    )

    with pytest.raises(ConfigurationError, match="the hierarchical manager"):
        ensemble.run()
    assert model.requests == []


def test_a_delegation_argument_is_json_the_reviewer_could_read() -> None:
    manager = ScriptedChatModel([delegate("Researcher", "facts"), "done"])
    ensemble, researcher_model, _ = team(manager)
    researcher_model.add("f")

    result = ensemble.run()

    assert result.raw == "done"
    sent = manager.requests[1].messages[2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(sent) == {"agent_role": "Researcher", "instructions": "facts"}


@tool(requires_approval=True)
def publish(text: str) -> str:
    """Publish a text.

    Args:
        text: what to publish
    """
    return f"published: {text}"


async def test_a_worker_tool_asks_the_reviewer_as_in_any_task() -> None:
    from agentensemble_review import Continue

    writer_model = ScriptedChatModel([tool_call("publish", {"text": "tides"}), "it is out"])
    writer = Agent(role="Writer", goal="Publish", tools=[publish], llm=writer_model)
    manager = ScriptedChatModel([delegate("Writer", "Publish the piece"), "published"])
    reviewer = ScriptedReviewHandler([Continue()])
    ensemble = Ensemble(
        tasks=[Task(description="Publish")],
        agents=[writer],
        workflow=Workflow.HIERARCHICAL,
        llm=manager,
        review_handler=reviewer,
    )

    result = await ensemble.arun()

    assert [r.tool_name for r in reviewer.requests] == ["publish"]
    assert result.task_outputs[0].tool_calls[0].output == "published: tides"


def test_a_worker_tool_needing_approval_without_a_reviewer_fails_before_any_call() -> None:
    manager = ScriptedChatModel()
    writer = Agent(role="Writer", goal="Publish", tools=[publish], llm=ScriptedChatModel())
    ensemble = Ensemble(
        tasks=[Task(description="Publish")],
        agents=[writer],
        workflow=Workflow.HIERARCHICAL,
        llm=manager,
    )

    with pytest.raises(
        ConfigurationError, match=r"agent 'Writer' \(as a worker\): publish require approval"
    ):
        ensemble.run()
    assert manager.requests == []


async def test_an_exit_early_inside_a_worker_stops_the_run_keeping_earlier_delegations() -> None:
    from agentensemble import ExitEarlyError

    @tool
    def stop_everything(reason: str) -> str:
        """Stop the run.

        Args:
            reason: why
        """
        raise ExitEarlyError(reason)

    manager = ScriptedChatModel(
        [delegate("Researcher", "facts"), delegate("Writer", "write"), "never reached"]
    )
    researcher = Agent(role="Researcher", goal="g", llm=ScriptedChatModel(["facts"]))
    writer = Agent(
        role="Writer",
        goal="g",
        tools=[stop_everything],
        llm=ScriptedChatModel([tool_call("stop_everything", {"reason": "enough"})]),
    )
    ensemble = Ensemble(
        tasks=[Task(description="t")],
        agents=[researcher, writer],
        workflow=Workflow.HIERARCHICAL,
        llm=manager,
    )

    result = await ensemble.arun()

    assert result.exit_reason is ExitReason.USER_EXIT_EARLY
    assert [o.raw for o in result.task_outputs] == ["facts"]
    assert manager.remaining == 1


def test_the_manager_brief_lists_each_task_with_its_worker_and_inputs() -> None:
    from agentensemble.workflows.base import PreparedTask
    from agentensemble.workflows.hierarchical import manager_brief

    writer = Agent(role="Writer", goal="g")
    research = Task(description="Research tides", expected_output="Facts")
    write = Task(description="Write it up", agent=writer, context=[research])
    prepared = [
        PreparedTask(task=t, description=t.description, expected_output=t.expected_output,
                     agent_role="handler")
        for t in (research, write)
    ]  # fmt: skip

    brief = manager_brief(prepared)

    assert "1. Research tides\n   Expected output: Facts" in brief
    assert (
        "2. Write it up\n   Expected output: A complete and accurate response to the task.\n"
        "   Suggested worker: Writer\n   Builds on the results of task(s): 1"
    ) in brief
    assert "Use the delegate_task tool" in brief


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"input_guardrails": [lambda seen: None]}, "input_guardrails"),
        ({"output_guardrails": [lambda output: None]}, "output_guardrails"),
        ({"review": Review.required()}, "review"),
    ],
)
def test_per_task_checks_the_manager_would_skip_are_refused_before_any_call(
    settings: dict[str, object], named: str
) -> None:
    worker = Agent(role="Researcher", goal="Research", llm=ScriptedChatModel([]))
    first = Task(description="Research tides", agent=worker, **settings)  # type: ignore[arg-type]
    last = Task(description="Summarise", agent=worker)
    with pytest.raises(ValueError, match=f"task 1 .* has {named}, which workflow HIERARCHICAL"):
        Ensemble(
            tasks=[first, last],
            workflow=Workflow.HIERARCHICAL,
            manager_llm=ScriptedChatModel([]),
            review_handler=AutoApproveReviewHandler(),
        )
