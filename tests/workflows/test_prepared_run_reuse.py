"""A plain run's preparation is kept from an ensemble's second run on, and prepared afresh as
soon as anything it was made from changes: a field of the ensemble, a task or an agent, a list
they hold, the inputs, or whether there is a review handler (workflows/_reuse.py). Counted,
not timed."""

from __future__ import annotations

import gc
from typing import Any

import pytest

import agentensemble._run as run_module
from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.errors import ConfigurationError, PromptTemplateError
from agentensemble.llm.types import ChatResponse
from agentensemble.testing import FunctionChatModel, tool_call
from agentensemble.workflows import _reuse
from agentensemble.workflows.runners import SequentialRunner


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return key.upper()


@tool
def stamp(text: str) -> str:
    """Stamp a text."""
    return "stamped"


@tool(requires_approval=True)
def wipe(target: str) -> str:
    """Wipe a target."""
    return "wiped"


def _answer(messages: list[Any], tools: list[Any] | None) -> ChatResponse | str:
    return "done"


@pytest.fixture
def prepared(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per run that was prepared (not reused)."""
    calls: list[int] = []
    real = run_module.prepare_run

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "prepare_run", counting)
    return calls


def _warm(ensemble: Ensemble, prepared: list[int], **inputs: Any) -> None:
    """Two runs: the first is only remembered, the second keeps its preparation."""
    for _ in range(2):
        ensemble.run(inputs=inputs or None)
    assert len(prepared) == 2
    assert id(ensemble) in _reuse._kept


def _plain(model: FunctionChatModel, *, tools: list[Any] | None = None) -> Ensemble:
    agent = Agent(role="Clerk", goal="Help with {topic}", tools=tools or [], llm=model)
    return Ensemble(tasks=[Task(description="Write about {topic}", agent=agent)])


def test_a_plain_run_is_prepared_on_its_first_two_runs_and_then_reused(prepared: list[int]) -> None:
    model = FunctionChatModel(_answer)
    ensemble = _plain(model)
    for _ in range(4):
        output = ensemble.run(inputs={"topic": "owls"})
        assert output.raw == "done"
        assert output.output_for(ensemble.tasks[0]) is output.task_outputs[0]
    assert len(prepared) == 2
    assert [r.last_user_content.count("Write about owls") for r in model.requests] == [1] * 4


def test_other_inputs_prepare_again(prepared: list[int]) -> None:
    model = FunctionChatModel(_answer)
    ensemble = _plain(model)
    _warm(ensemble, prepared, topic="owls")
    ensemble.run(inputs={"topic": "bats"})
    assert len(prepared) == 3
    assert "Write about bats" in model.requests[-1].last_user_content
    assert "Help with bats" in model.requests[-1].messages[0]["content"]


def test_an_input_of_another_type_with_an_equal_value_prepares_again(
    prepared: list[int],
) -> None:
    model = FunctionChatModel(_answer)
    ensemble = _plain(model)
    _warm(ensemble, prepared, topic=1)
    ensemble.run(inputs={"topic": True})  # True == 1, but it fills in as "True"
    assert len(prepared) == 3
    assert "Write about True" in model.requests[-1].last_user_content


def test_inputs_that_are_not_plain_values_are_never_kept(prepared: list[int]) -> None:
    model = FunctionChatModel(_answer)
    ensemble = _plain(model)
    topics = ["owls"]
    for _ in range(2):
        ensemble.run(inputs={"topic": topics})
    assert id(ensemble) not in _reuse._kept
    topics.append("bats")  # the same list, changed in place
    ensemble.run(inputs={"topic": topics})
    assert len(prepared) == 3
    assert "bats" in model.requests[-1].last_user_content


def test_setting_a_task_field_prepares_again(prepared: list[int]) -> None:
    model = FunctionChatModel(_answer)
    ensemble = _plain(model)
    _warm(ensemble, prepared, topic="owls")
    ensemble.tasks[0].description = "Summarise {topic}"
    ensemble.run(inputs={"topic": "owls"})
    assert len(prepared) == 3
    assert "Summarise owls" in model.requests[-1].last_user_content


def test_setting_an_agent_field_prepares_again(prepared: list[int]) -> None:
    model = FunctionChatModel(_answer)
    ensemble = _plain(model)
    _warm(ensemble, prepared, topic="owls")
    agent = ensemble.tasks[0].agent
    assert agent is not None
    agent.role = "Editor"
    ensemble.run(inputs={"topic": "owls"})
    assert len(prepared) == 3
    assert "Editor" in model.requests[-1].messages[0]["content"]


def test_a_new_agent_with_its_own_model_prepares_again(prepared: list[int]) -> None:
    first, second = FunctionChatModel(_answer), FunctionChatModel(lambda m, t: "second")
    ensemble = _plain(first)
    _warm(ensemble, prepared, topic="owls")
    ensemble.tasks[0].agent = Agent(role="Other", goal="g", llm=second)
    assert ensemble.run(inputs={"topic": "owls"}).raw == "second"
    assert len(prepared) == 3


def test_appending_a_tool_in_place_prepares_again(prepared: list[int]) -> None:
    model = FunctionChatModel(_answer)
    ensemble = _plain(model, tools=[lookup])
    _warm(ensemble, prepared, topic="owls")
    agent = ensemble.tasks[0].agent
    assert agent is not None
    agent.tools.append(stamp)
    ensemble.run(inputs={"topic": "owls"})
    assert len(prepared) == 3
    tools = model.requests[-1].tools or []
    assert [spec["function"]["name"] for spec in tools] == ["lookup", "stamp"]


def test_appending_a_task_in_place_prepares_again(prepared: list[int]) -> None:
    model = FunctionChatModel(_answer)
    ensemble = _plain(model)
    _warm(ensemble, prepared, topic="owls")
    later = Task(description="Then check {topic}", agent=ensemble.tasks[0].agent)
    ensemble.tasks.append(later)
    output = ensemble.run(inputs={"topic": "owls"})
    assert len(prepared) == 3
    assert len(output.task_outputs) == 2
    assert output.output_for(later) is output.task_outputs[1]


def test_a_change_that_breaks_the_setup_still_fails_before_any_model_call(
    prepared: list[int],
) -> None:
    model = FunctionChatModel(_answer)
    ensemble = _plain(model)
    _warm(ensemble, prepared, topic="owls")
    ensemble.tasks[0].description = "Write about {topic} for {reader}"
    with pytest.raises(PromptTemplateError):
        ensemble.run(inputs={"topic": "owls"})
    assert len(model.requests) == 2


def test_removing_the_review_handler_is_noticed(prepared: list[int]) -> None:
    model = FunctionChatModel(_answer)
    agent = Agent(role="Clerk", goal="g", tools=[wipe], llm=model)

    class Approve:
        def review(self, request: Any) -> Any:  # never asked: the model calls no tool
            raise AssertionError("not asked")

    ensemble = Ensemble(tasks=[Task(description="d", agent=agent)], review_handler=Approve())
    _warm(ensemble, prepared)
    ensemble.review_handler = None
    with pytest.raises(ConfigurationError):
        ensemble.run()
    assert len(model.requests) == 2


def test_a_listener_added_later_hears_the_reused_run(prepared: list[int]) -> None:
    model = FunctionChatModel(_answer)
    ensemble = _plain(model)
    _warm(ensemble, prepared, topic="owls")
    heard: list[str] = []

    class Listener:
        def on_event(self, event: Any) -> None:
            heard.append(type(event).__name__)

    ensemble.listeners.append(Listener())
    ensemble.run(inputs={"topic": "owls"})
    assert len(prepared) == 2  # listeners are no part of preparation
    assert heard[0] == "EnsembleStarted" and heard[-1] == "EnsembleCompleted"


def test_a_run_with_tool_calls_reuses_and_records_each_run_apart(prepared: list[int]) -> None:
    script: list[ChatResponse | str] = [
        "warm",
        "warm",
        tool_call("lookup", {"key": "a"}),
        "first",
        tool_call("lookup", {"key": "b"}),
    ]
    turns = iter(script)
    model = FunctionChatModel(lambda messages, tools: next(turns, "second"))
    ensemble = _plain(model, tools=[lookup])
    _warm(ensemble, prepared, topic="owls")
    first = ensemble.run(inputs={"topic": "owls"})
    second = ensemble.run(inputs={"topic": "owls"})
    assert len(prepared) == 2
    assert [c.output for c in first.task_outputs[0].tool_calls] == ["A"]
    assert [c.output for c in second.task_outputs[0].tool_calls] == ["B"]
    assert first.run_id != second.run_id
    assert first.trace is not None and second.trace is not None
    assert first.trace.tasks[0].tool_calls[0].output == "A"
    assert second.trace.tasks[0].tool_calls[0].output == "B"


def test_a_model_named_by_a_string_is_never_kept() -> None:
    agent = Agent(role="Clerk", goal="g", llm="openai/gpt-4o-mini")
    ensemble = Ensemble(tasks=[Task(description="d", agent=agent)])
    from agentensemble.workflows.prepare import prepare_run

    try:
        run = prepare_run(ensemble, {})
    except ConfigurationError:  # no key here: nothing to keep either way
        return
    plan = (run, SequentialRunner())
    for _ in range(2):
        _reuse.keep_run(ensemble, {}, None, plan)
    assert _reuse.reused_run(ensemble, {}, None) is None


def test_a_first_run_keeps_nothing_and_the_kept_run_goes_with_its_ensemble(
    prepared: list[int],
) -> None:
    ensemble = _plain(FunctionChatModel(_answer))
    ensemble.run(inputs={"topic": "owls"})
    key = id(ensemble)
    assert key not in _reuse._kept and key in _reuse._ran
    ensemble.run(inputs={"topic": "owls"})
    assert key in _reuse._kept
    del ensemble
    gc.collect()
    assert key not in _reuse._kept and key not in _reuse._ran


def test_a_list_field_replaced_by_something_else_fails_as_before(prepared: list[int]) -> None:
    model = FunctionChatModel(_answer)
    ensemble = _plain(model, tools=[lookup])
    _warm(ensemble, prepared, topic="owls")
    agent = ensemble.tasks[0].agent
    assert agent is not None
    agent.tools = 5  # no validation on assignment
    with pytest.raises(Exception) as caught:
        ensemble.run(inputs={"topic": "owls"})
    # the check missed, and the run failed where it always did, in its own words
    assert not any(str(entry.path).endswith("workflows/_reuse.py") for entry in caught.traceback)


def test_a_run_that_is_no_longer_plain_drops_what_was_kept(prepared: list[int]) -> None:
    model = FunctionChatModel(_answer)
    ensemble = _plain(model)
    _warm(ensemble, prepared, topic="owls")
    ensemble.run(inputs={"topic": ["owls", "bats"]})  # a list input: never kept
    assert id(ensemble) not in _reuse._kept
