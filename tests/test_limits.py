"""Run budgets: one counter per run, checked before each model and tool call, across every task,
loop iteration, parallel branch and nested run; nothing finished is lost when a limit stops it."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from pydantic import ValidationError

from agentensemble import Agent, Ensemble, Loop, Task, Workflow, tool
from agentensemble.config import load_crew
from agentensemble.errors import ConfigurationError, UsageLimitExceeded
from agentensemble.limits import UsageLimits, UsageMeter, metered
from agentensemble.outputs import TokenUsage
from agentensemble.testing import FunctionChatModel, tool_call


@tool
def ping(text: str) -> str:
    """Answer pong."""
    return "pong " + text


def one_tool_then_answer(messages: list[dict[str, Any]], tools: Any) -> Any:
    """Two model calls and one tool call per task."""
    if messages[-1]["role"] == "tool":
        return "done: " + str(messages[1]["content"]).split("## Task")[-1].strip()[:20]
    return tool_call("ping", {"text": "x"})


def two_tasks(**settings: Any) -> Ensemble:
    model = FunctionChatModel(one_tool_then_answer)
    agent = Agent(role="Worker", goal="Work", tools=[ping], llm=model)
    return Ensemble(
        tasks=[Task(description="First", agent=agent), Task(description="Second", agent=agent)],
        **settings,
    )


@pytest.mark.parametrize(
    ("limits", "field"),
    [
        ({"model_calls": -1}, "model_calls"),
        ({"model_calls": 0}, "model_calls"),
        ({"model_calls": 2.5}, "model_calls"),
        ({"model_calls": "3"}, "model_calls"),
        ({"tool_calls": -1}, "tool_calls"),
        ({"input_tokens": 0}, "input_tokens"),
        ({"output_tokens": True}, "output_tokens"),
        ({"total_tokens": -5}, "total_tokens"),
        ({"cost_usd": 0}, "cost_usd"),
        ({"cost_usd": -0.5}, "cost_usd"),
        ({"cost_usd": True}, "cost_usd"),
        ({"cost_usd": float("inf")}, "cost_usd"),
        ({"cost_usd": "1"}, "cost_usd"),
        ({"calls": 3}, "calls"),
    ],
)
def test_a_limit_that_means_nothing_is_refused_when_built_naming_the_field(
    limits: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        UsageLimits(**limits)
    assert caught.value.errors()[0]["loc"] == (field,)


def test_zero_tool_calls_means_the_run_may_call_no_tool() -> None:
    assert UsageLimits(tool_calls=0).tool_calls == 0


def test_a_run_stops_before_the_call_that_would_pass_the_limit_keeping_every_output() -> None:
    with pytest.raises(UsageLimitExceeded) as caught:
        two_tasks(limits=UsageLimits(model_calls=3)).run()
    stopped = caught.value
    assert (stopped.limit, stopped.used, stopped.allowed) == ("model_calls", 3, 3)
    assert [o.task_description for o in stopped.completed_outputs] == ["First"]
    assert stopped.task is not None and stopped.task.description == "Second"
    assert "the next call was not made" in str(stopped)


def test_run_limits_replace_the_ensembles_for_that_run() -> None:
    ensemble = two_tasks(limits=UsageLimits(model_calls=3))
    assert len(ensemble.run(limits=UsageLimits(model_calls=4)).task_outputs) == 2
    with pytest.raises(UsageLimitExceeded):
        ensemble.run()  # the ensemble's own limit again


@pytest.mark.parametrize(
    ("limits", "field", "finished"),
    [
        (UsageLimits(tool_calls=1), "tool_calls", 1),
        (UsageLimits(tool_calls=0), "tool_calls", 0),
        (UsageLimits(input_tokens=30), "input_tokens", 0),  # the first prompt alone is more
        (UsageLimits(output_tokens=3), "output_tokens", 1),
        (UsageLimits(total_tokens=80), "total_tokens", 1),  # the first task uses 15
    ],
)
def test_each_limit_stops_the_run_before_a_call_that_would_pass_it(
    limits: UsageLimits, field: str, finished: int
) -> None:
    with pytest.raises(UsageLimitExceeded) as caught:
        two_tasks().run(limits=limits)
    assert caught.value.limit == field
    assert len(caught.value.completed_outputs) == finished


def test_the_count_holds_across_loop_iterations() -> None:
    model = FunctionChatModel(lambda messages, tools: "again")
    agent = Agent(role="Worker", goal="Work", llm=model)
    loop = Loop(name="refine", body=[Task(description="Refine", agent=agent)], max_iterations=50)
    with pytest.raises(UsageLimitExceeded) as caught:
        Ensemble(tasks=[loop]).run(limits=UsageLimits(model_calls=4))
    assert len(caught.value.completed_outputs) == 4  # four iterations, then stopped
    assert len(model.requests) == 4


def test_the_count_holds_across_parallel_branches() -> None:
    model = FunctionChatModel(one_tool_then_answer)
    agent = Agent(role="Worker", goal="Work", tools=[ping], llm=model)
    tasks = [Task(description=f"Branch {n}", agent=agent) for n in range(4)]
    with pytest.raises(Exception) as caught:
        Ensemble(tasks=tasks, workflow=Workflow.PARALLEL).run(limits=UsageLimits(tool_calls=2))
    assert isinstance(caught.value, UsageLimitExceeded)
    assert len([r for r in model.requests if r.messages[-1]["role"] == "tool"]) <= 2


def test_a_nested_run_counts_on_its_parents_budget() -> None:
    inner = two_tasks()

    @tool
    def delegate(topic: str) -> str:
        """Run the inner team."""
        return inner.run({"topic": topic}).raw

    def outer_model(messages: list[dict[str, Any]], tools: Any) -> Any:
        if messages[-1]["role"] == "tool":
            return "outer done"
        return tool_call("delegate", {"topic": "t"})

    agent = Agent(role="Lead", goal="Lead", tools=[delegate], llm=FunctionChatModel(outer_model))
    outer = Ensemble(tasks=[Task(description="Lead", agent=agent)])
    with pytest.raises(UsageLimitExceeded) as caught:
        outer.run(limits=UsageLimits(model_calls=4))  # 1 outer + 4 inner: the 5th is refused
    assert caught.value.limit == "model_calls"
    assert outer.run(limits=UsageLimits(model_calls=6)).raw == "outer done"


def test_a_cost_limit_with_a_model_of_unknown_price_is_refused_before_the_run() -> None:
    model = FunctionChatModel(one_tool_then_answer)
    agent = Agent(role="Worker", goal="Work", llm=model)
    with pytest.raises(ConfigurationError, match="price table has none for 'function'"):
        Ensemble(tasks=[Task(description="Work", agent=agent)]).run(
            limits=UsageLimits(cost_usd=1.0)
        )
    assert model.requests == []


def test_a_cost_limit_stops_a_run_on_a_priced_model() -> None:
    model = FunctionChatModel(one_tool_then_answer)
    model.model = "openai/gpt-4o"  # type: ignore[misc]  # priced by litellm's bundled table
    agent = Agent(role="Worker", goal="Work", tools=[ping], llm=model)
    ensemble = Ensemble(tasks=[Task(description="Work", agent=agent)])
    assert ensemble.run(limits=UsageLimits(cost_usd=1.0)).cost_usd is not None
    asked = len(model.requests)
    with pytest.raises(UsageLimitExceeded) as caught:  # the first prompt alone costs more
        ensemble.run(limits=UsageLimits(cost_usd=1e-6))
    assert (caught.value.limit, caught.value.used) == ("cost_usd", 0)
    assert "the next prompt costs about" in str(caught.value)
    assert len(model.requests) == asked  # the call was never made


def test_run_limits_must_be_usage_limits() -> None:
    with pytest.raises(ConfigurationError, match=r"run\(limits=...\) must be a UsageLimits"):
        two_tasks().run(limits={"model_calls": 3})  # type: ignore[arg-type]


def test_the_error_survives_pickling_with_its_outputs() -> None:
    with pytest.raises(UsageLimitExceeded) as caught:
        two_tasks().run(limits=UsageLimits(model_calls=3))
    copy = pickle.loads(pickle.dumps(caught.value))
    assert (copy.limit, copy.used, copy.allowed) == ("model_calls", 3, 3)
    assert len(copy.completed_outputs) == 1


def test_a_meter_counts_every_enclosing_run() -> None:
    with metered(UsageLimits(model_calls=10)) as outer:
        with metered(UsageLimits(tool_calls=5)) as inner:
            assert isinstance(inner, UsageMeter) and inner.parent is outer
            inner.reserve_model_call(0, None)
            inner.add_usage(TokenUsage(prompt_tokens=3, completion_tokens=2, total_tokens=5), 0.5)
        with metered(None) as same:
            assert same is outer
    assert outer is not None
    assert (outer.model_calls, outer.total_tokens, outer.cost_usd) == (1, 5, 0.5)


def test_a_crew_file_sets_limits_and_bad_ones_name_the_key() -> None:
    crew = {
        "model": "openai/gpt-4o-mini",
        "limits": {"model_calls": 5, "cost_usd": 0.25},
        "tasks": [{"description": "Work"}],
    }
    assert load_crew(crew).limits == UsageLimits(model_calls=5, cost_usd=0.25)
    with pytest.raises(Exception, match=r"limits.*model_calls") as caught:
        load_crew({**crew, "limits": {"model_calls": -2}})
    assert "greater than 0" in str(caught.value)


def test_a_nested_ensemble_step_with_limits_of_its_own_is_refused() -> None:
    inner = two_tasks(limits=UsageLimits(model_calls=2), name="inner")
    with pytest.raises(ConfigurationError, match="nested ensemble 'inner' has limits"):
        Ensemble(tasks=[inner])
    assert Ensemble(tasks=[two_tasks(name="inner")], limits=UsageLimits(model_calls=2))


def test_the_count_holds_across_for_each_items_and_delegations() -> None:
    model = FunctionChatModel(lambda messages, tools: "summary")
    agent = Agent(role="Summariser", goal="Summarise", llm=model)
    mapper = Task(name="summarise", description="Summarise {item}", for_each="docs", agent=agent)
    with pytest.raises(UsageLimitExceeded) as caught:
        Ensemble(tasks=[mapper]).run(
            {"docs": [f"doc {n}" for n in range(10)]}, limits=UsageLimits(model_calls=4)
        )
    assert caught.value.limit == "model_calls"
    assert len(model.requests) == 4

    def lead(messages: list[dict[str, Any]], tools: Any) -> Any:
        if messages[-1]["role"] == "tool":
            return "lead done"
        return tool_call(
            "delegate_to_agent", {"agent_role": "Worker", "instructions": "Write the part"}
        )

    worker_model = FunctionChatModel(lambda messages, tools: "part written")
    worker = Agent(role="Worker", goal="Write parts", llm=worker_model)
    boss = Agent(role="Lead", goal="Lead", llm=FunctionChatModel(lead), allow_delegation=True)
    team = Ensemble(agents=[boss, worker], tasks=[Task(description="Lead the work", agent=boss)])
    assert team.run(limits=UsageLimits(model_calls=3)).raw == "lead done"
    with pytest.raises(UsageLimitExceeded):  # lead, the worker's turn, lead: the third refused
        team.run(limits=UsageLimits(model_calls=2))
    assert len(worker_model.requests) == 2  # the worker's calls count on the same budget
