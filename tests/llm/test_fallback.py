"""Fallback chains: which failures hand a turn to the next model, what a chain answers, and the
settings refused when a chain is built."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import ValidationError

from agentensemble import LLM, Agent, Ensemble, Task
from agentensemble.config import load_crew
from agentensemble.errors import (
    AgentEnsembleError,
    AllModelsFailedError,
    ConfigurationError,
    LLMError,
    TaskExecutionError,
)
from agentensemble.events import LLMCallCompleted, StreamRestarted, TokenDelta
from agentensemble.llm._chain import answered_by, falls_back, provider_unavailable
from agentensemble.llm.fallback import FallbackModel
from agentensemble.llm.types import ChatResponse
from agentensemble.testing import ScriptedChatModel

pytestmark = pytest.mark.anyio


class ModelRefusalError(AgentEnsembleError):
    """Stands in for the real-models branch's refusal error: the rule knows it by name."""


def llm_error(status: int | None, cause: BaseException | None = None) -> LLMError:
    error = LLMError(f"failed with {status}", status_code=status, attempts=2)
    error.__cause__ = cause
    return error


class Failing:
    """A ChatModel that fails every turn with ``error`` (after showing ``shown`` if streaming)."""

    def __init__(self, name: str, error: BaseException, shown: str = "") -> None:
        self.model, self.error, self.shown, self.calls = name, error, shown, 0

    async def complete(self, messages: Sequence[Any], *, tools: Any = None, **_: Any) -> Any:
        self.calls += 1
        from agentensemble.llm.streaming import current_sink

        sink = current_sink()
        if sink is not None and self.shown:
            sink.text(self.shown)
        raise self.error


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (llm_error(429), True),  # rate limited after the model's own retries
        (llm_error(503), True),
        (llm_error(500), True),
        (llm_error(529), True),  # overloaded
        (llm_error(408), True),
        (llm_error(None, ConnectionRefusedError("refused")), True),
        (llm_error(None, TimeoutError("slow")), True),
        (TimeoutError("slow"), True),
        (ConnectionResetError("reset"), True),
        (llm_error(400), False),  # a bad request fails on every model alike
        (llm_error(401), False),
        (llm_error(404), False),
        (llm_error(None), False),  # no cause to read: unknown
        (ModelRefusalError("I can't help with that"), False),
        (ConfigurationError("no API key"), False),
        (ValueError("a bug"), False),
    ],
)
def test_the_default_rule_falls_back_only_on_what_another_provider_may_not_have(
    error: BaseException, expected: bool
) -> None:
    assert provider_unavailable(error) is expected


def test_a_rule_may_be_exception_classes_or_a_function() -> None:
    assert falls_back((LLMError,), llm_error(400))
    assert not falls_back((TimeoutError,), llm_error(503))
    assert falls_back(lambda error: "quota" in str(error), RuntimeError("quota"))


async def test_the_next_model_answers_the_same_turn_and_says_it_answered() -> None:
    down = Failing("openai/primary", llm_error(503))
    backup = ScriptedChatModel(["from the backup"])
    chain = FallbackModel([down, backup])
    messages = [{"role": "user", "content": "hi"}]
    response = await chain.complete(messages)
    assert response.content == "from the backup"
    assert response.model == "scripted"  # the answering model's name, not the chain's
    assert backup.requests[0].messages == messages  # the same turn, unchanged
    assert response.attempts == 3  # the primary's two, then one


@pytest.mark.parametrize("error", [llm_error(400), ModelRefusalError("no")])
async def test_a_bad_request_or_a_refusal_never_falls_back(error: BaseException) -> None:
    backup = ScriptedChatModel(["never asked"])
    with pytest.raises(type(error)):
        await FallbackModel([Failing("a", error), backup]).complete([])
    assert backup.requests == []


async def test_when_every_model_fails_one_error_lists_each_failure() -> None:
    chain = FallbackModel(
        [Failing("openai/a", llm_error(429)), Failing("openai/b", TimeoutError("too slow"))]
    )
    with pytest.raises(AllModelsFailedError) as caught:
        await chain.complete([])
    assert [name for name, _ in caught.value.failures] == ["openai/a", "openai/b"]
    assert "openai/a: failed with 429" in str(caught.value)
    assert "openai/b: too slow" in str(caught.value)
    assert isinstance(caught.value, LLMError)  # handled as any provider failure


async def test_a_custom_rule_decides_instead() -> None:
    backup = ScriptedChatModel(["answered"])
    chain = FallbackModel([Failing("a", llm_error(400)), backup], fallback_on=(LLMError,))
    assert (await chain.complete([])).content == "answered"


def test_an_ensemble_run_shows_which_model_answered_in_events_trace_and_cost() -> None:
    seen: list[Any] = []

    class Listen:
        def on_event(self, event: Any) -> None:
            seen.append(event)

    backup = ScriptedChatModel([ChatResponse(content="done")])
    backup.model = "openai/gpt-4o-mini"  # a model litellm's price table knows
    chain = FallbackModel([Failing("openai/gpt-4o", llm_error(503)), backup])
    agent = Agent(role="Writer", goal="Write", llm=chain)
    output = Ensemble(tasks=[Task(description="Write", agent=agent)], listeners=[Listen()]).run()
    completed = [event for event in seen if isinstance(event, LLMCallCompleted)]
    assert [event.model for event in completed] == ["openai/gpt-4o-mini"]
    assert output.trace is not None
    assert output.trace.tasks[0].model_turns[0].model == "openai/gpt-4o-mini"
    assert output.task_outputs[0].cost_usd is not None and output.task_outputs[0].cost_usd > 0


def test_when_the_chain_fails_the_task_fails_with_every_failure() -> None:
    chain = FallbackModel([Failing("a", llm_error(503)), Failing("b", llm_error(502))])
    agent = Agent(role="Writer", goal="Write", llm=chain)
    with pytest.raises(TaskExecutionError) as caught:
        Ensemble(tasks=[Task(description="Write", agent=agent)]).run()
    assert isinstance(caught.value.__cause__, AllModelsFailedError)


async def test_a_stream_that_fails_midway_restarts_before_the_next_model_answers() -> None:
    chain = FallbackModel(
        [Failing("a", llm_error(503), shown="half an ans"), ScriptedChatModel(["whole answer"])]
    )
    agent = Agent(role="Writer", goal="Write", llm=chain)
    ensemble = Ensemble(tasks=[Task(description="Write", agent=agent)])
    kinds: list[str] = []
    async for event in ensemble.astream():
        if isinstance(event, TokenDelta):
            kinds.append("delta:" + event.text)
        elif isinstance(event, StreamRestarted):
            kinds.append("restarted")
    assert kinds[0] == "delta:half an ans"
    assert kinds[1] == "restarted"
    assert "".join(k[6:] for k in kinds[2:]) == "whole answer"


async def test_native_structured_output_only_when_every_model_takes_it() -> None:
    takes = ScriptedChatModel(native_structured_output=True)
    assert await FallbackModel(
        [takes, ScriptedChatModel(native_structured_output=True)]
    ).supports_response_format()
    assert not await FallbackModel([takes, ScriptedChatModel()]).supports_response_format()


def test_llm_fallbacks_is_the_same_chain_with_each_models_own_settings() -> None:
    llm = LLM(
        "openai/gpt-4o",
        max_tokens=100,
        fallbacks=["openai/gpt-4o-mini", LLM("openai/local", api_base="http://127.0.0.1:9")],
    )
    names = [name for name, _ in llm.fallback_chain()]
    assert names == ["openai/gpt-4o", "openai/gpt-4o-mini", "openai/local"]
    first, second, third = (model for _, model in llm.fallback_chain())
    assert first.max_tokens == 100 and first.fallbacks == []
    assert second.max_tokens is None
    assert third.api_base == "http://127.0.0.1:9"
    assert answered_by(llm, ChatResponse(model="openai/local"), "openai/gpt-4o") == "openai/local"
    assert answered_by(LLM("openai/x"), ChatResponse(model="x-2024"), "openai/x") == "openai/x"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: FallbackModel([]), "FallbackModel models is empty"),
        (lambda: FallbackModel("openai/a"), "must be a list of models"),
        (lambda: FallbackModel(["openai/a", 3]), r"FallbackModel models\[1\] must be a model"),
        (lambda: FallbackModel(["openai/a", "openai/a"]), r"models\[1\] repeats 'openai/a'"),
        (lambda: FallbackModel([LLM]), r"models\[0\] got the class LLM"),
        (lambda: FallbackModel(["openai/a"], fallback_on=()), "fallback_on must be"),
        (lambda: FallbackModel(["openai/a"], fallback_on="503"), "fallback_on must be"),
        (lambda: FallbackModel(["openai/a"], fallback_on=(int,)), "fallback_on must be"),
    ],
)
def test_a_chain_that_cannot_work_is_refused_when_built(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


def test_a_chain_containing_itself_is_refused() -> None:
    inner = FallbackModel(["openai/a", "openai/b"])
    with pytest.raises(ValueError, match="repeats 'openai/a'"):
        FallbackModel([inner, "openai/a"])
    with pytest.raises(ValueError, match="repeats"):
        FallbackModel([inner, inner])


@pytest.mark.parametrize(
    ("fallbacks", "message"),
    [
        (["openai/a"], r"fallbacks\[0\] is this model itself"),
        ([3], r"fallbacks\[0\] must be a model name or an LLM"),
        ("openai/b", "fallbacks must be a list"),
        (["openai/b", "openai/b"], r"fallbacks\[1\] repeats 'openai/b'"),
        ([LLM("openai/b", fallbacks=["openai/c"])], "has fallbacks of its own"),
    ],
)
def test_llm_fallbacks_that_cannot_work_are_refused_naming_the_field(
    fallbacks: Any, message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        LLM("openai/a", fallbacks=fallbacks)


def test_a_chain_is_an_agents_model_like_any_other() -> None:
    agent = Agent(role="Writer", goal="Write", llm=FallbackModel(["openai/a", "openai/b"]))
    assert agent.llm.model == "openai/a > openai/b"
    assert asyncio.iscoroutinefunction(agent.llm.complete)


def test_a_crew_file_names_a_fallback_chain_among_a_models_settings() -> None:
    agent = {"role": "W", "goal": "G", "llm": {"model": "openai/gpt-4o", "fallbacks": ["x/y"]}}
    crew = {"agents": {"w": agent}, "tasks": [{"description": "Work", "agent": "w"}]}
    assert [m.model for m in load_crew(crew).agents[0].llm.fallbacks] == ["x/y"]
    agent["llm"] = {"model": "openai/gpt-4o", "fallbacks": [3]}
    with pytest.raises(Exception, match=r"agents\.w\.llm\.fallbacks: fallbacks\[0\] must be"):
        load_crew(crew)


def test_the_task_output_names_the_member_that_answered() -> None:
    backup = ScriptedChatModel([ChatResponse(content="done")])
    backup.model = "openai/gpt-4o-mini"
    chain = FallbackModel([Failing("openai/gpt-4o", llm_error(503)), backup])
    agent = Agent(role="Writer", goal="Write", llm=chain)
    output = Ensemble(tasks=[Task(description="Write", agent=agent)]).run()
    assert output.task_outputs[0].model == "openai/gpt-4o-mini"  # not "openai/gpt-4o > ..."


def _run_with(model: Any, **ensemble: Any) -> None:
    agent = Agent(role="Writer", goal="Write", llm=model)
    Ensemble(tasks=[Task(description="Write", agent=agent)], **ensemble).run()


@pytest.mark.parametrize(
    ("model", "named"),
    [
        (
            lambda: FallbackModel(["openai/gpt-4o-mini", "acme/some-model"]),
            r"FallbackModel models\[1\] \('acme/some-model'\): .*provider 'acme'",
        ),
        (
            lambda: FallbackModel(["openai/gpt-4o-mini", "anthropic/claude-3-5-haiku-latest"]),
            r"FallbackModel models\[1\] \('anthropic/claude-3-5-haiku-latest'\): .*_API_KEY",
        ),
        (
            lambda: LLM("openai/gpt-4o-mini", fallbacks=["anthropic/claude-3-5-haiku-latest"]),
            r"fallbacks\[0\] \('anthropic/claude-3-5-haiku-latest'\): .*ANTHROPIC_API_KEY",
        ),
    ],
)
def test_a_member_that_cannot_work_refuses_the_run_before_any_call_naming_it(
    model: Any, named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match=named):
        _run_with(model())


def test_a_cost_limit_with_a_member_of_unknown_price_is_refused_before_the_run() -> None:
    from agentensemble.limits import UsageLimits

    priced = ScriptedChatModel(["never asked"])
    priced.model = "openai/gpt-4o-mini"
    mystery = ScriptedChatModel(["never asked"])
    mystery.model = "mystery-model"
    chain = FallbackModel([priced, mystery])
    with pytest.raises(ConfigurationError, match="price table has none for 'mystery-model'"):
        _run_with(chain, limits=UsageLimits(cost_usd=1.0))
    assert priced.requests == [] and mystery.requests == []
