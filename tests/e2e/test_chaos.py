"""Chaos: a five-task ensemble with tools and reviews, against a provider failing 30 % of requests.

The local OpenAI-compatible server injects a seeded fault in front of 30 % of requests: 429 with
and without ``Retry-After``, 500/502/503, dropped connections, truncated and non-JSON bodies, and
answers that come after the client's timeout (or never). The scripted "model" itself misbehaves
as well: it sends tool-call arguments that are not JSON, fail validation, or name a tool that does
not exist. Every run must end in one of two ways, within a deadline:

- it completes with all five outputs, each exactly what the model answered, or
- it raises ``TaskExecutionError`` holding every output completed before the failed task.

Any other exception, a hang, a lost or altered output, or more attempts per call than the retry
policy allows fails the suite. The figures (runs, faults, retries, wall time) are printed.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from openai_server import Fault, OpenAIServer, Reply, TextReply, ToolCallsReply

from agentensemble import (
    LLM,
    Agent,
    AgentTool,
    Ensemble,
    EnsembleEvent,
    LLMCallCompleted,
    LLMError,
    RetryPolicy,
    Task,
    TaskExecutionError,
    TaskOutput,
    ToolResult,
    Workflow,
    tool,
)
from agentensemble_review import Continue, ReviewPolicy, ScriptedReviewHandler

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.usefixtures("model_lane")]

RUNS = 30
FAULT_RATE = 0.3
CLIENT_TIMEOUT = 0.5  # seconds; the slow faults answer after SLOW_FAULT seconds
SLOW_FAULT = 1.0
MAX_ATTEMPTS = 4
POLICY = RetryPolicy(
    max_attempts=MAX_ATTEMPTS,
    initial_backoff=0.001,
    max_backoff=0.01,
    jitter=0.5,
    max_retry_after=0.05,  # a provider asking for 5 s waits 50 ms here
)
RUN_DEADLINE = 30.0  # a run that takes longer counts as a hang

FAULT_MIX = [
    Fault.http(429, retry_after=0),
    Fault.http(429, retry_after=5),
    Fault.http(429),
    Fault.http(500),
    Fault.http(502),
    Fault.http(503),
    Fault(kind="drop"),
    Fault(kind="truncated"),
    Fault(kind="non_json"),
    Fault(kind="slow", delay=SLOW_FAULT),  # answers after the client gave up
    Fault(kind="hang", delay=SLOW_FAULT),  # never answers, then hangs up
]


# -- the team's tools ------------------------------------------------------------------------


@tool
def lookup(topic: str, depth: int = 1) -> str:
    """Look up facts about a topic.

    Args:
        topic: what to look up
        depth: how thorough to be
    """
    return f"facts about {topic} (depth {depth})"


class Shout(AgentTool):
    name = "shout"
    description = "Repeats its input in capitals."

    def execute(self, input: str) -> ToolResult:
        return ToolResult.success(input.upper())


# -- the model: a pure function of the conversation, so a lost answer is simply asked again ----

Calls = tuple[tuple[str, str], ...]

#: What the model calls in each turn of each step, before it answers in text.
PLANS: dict[int, list[Calls]] = {
    1: [(("lookup", '{"topic": "tides", "depth": 2}'), ("shout", '{"input": "tides"}'))],
    2: [(("lookup", '{"topic": "moon",'),), (("lookup", '{"topic": "moon"}'),)],
    3: [(("search_web", '{"query": "orbits"}'),), (("shout", '{"input": "orbits"}'),)],
    4: [(("lookup", '{"depth": "deep"}'), ("shout", '"bare string"'))],
    5: [],
}

#: Each step's final answer, written out independently of the model function below.
EXPECTED_RAW = {
    1: "Step 1 done. Results: facts about tides (depth 2) | TIDES. Errors: 0.",
    2: "Step 2 done. Results: facts about moon (depth 1). Errors: 1.",
    3: "Step 3 done. Results: ORBITS. Errors: 1.",
    4: "Step 4 done. Results: BARE STRING. Errors: 1.",
    5: "Step 5 done. Results: none. Errors: 0.",
}
#: Each step's tool calls as (name, succeeded), in call order.
EXPECTED_CALLS = {
    1: [("lookup", True), ("shout", True)],
    2: [("lookup", False), ("lookup", True)],
    3: [("search_web", False), ("shout", True)],
    4: [("lookup", False), ("shout", True)],
    5: [],
}
STEP = re.compile(r"## Task\n\[step (\d)\]")


def step_of(body: dict[str, Any]) -> int:
    match = STEP.search(body["messages"][1]["content"])
    assert match is not None, "every task prompt names its step"
    return int(match.group(1))


def model(body: dict[str, Any]) -> Reply:
    """The scripted model: call the step's tools turn by turn, then sum up what they said."""
    messages = body["messages"]
    step = step_of(body)
    turn = sum(1 for m in messages if m["role"] == "assistant")
    if turn < len(PLANS[step]):
        return ToolCallsReply(PLANS[step][turn])
    results = [m["content"] for m in messages if m["role"] == "tool"]
    good = [r for r in results if not r.startswith("Error:")]
    return TextReply(
        f"Step {step} done. Results: {' | '.join(good) or 'none'}. "
        f"Errors: {len(results) - len(good)}."
    )


# -- one run ---------------------------------------------------------------------------------


def build_ensemble(llm: LLM, reviewer: ScriptedReviewHandler, listener: Any) -> Ensemble:
    researcher = Agent(role="Researcher", goal="Gather facts", tools=[lookup, Shout()], llm=llm)
    writer = Agent(role="Writer", goal="Write it up", tools=[Shout()], llm=llm)
    tasks: list[Task] = []
    for step in range(1, 6):
        agent = researcher if step in (1, 2, 4) else writer
        tasks.append(
            Task(
                description=f"[step {step}] Work on part {step} of the tides report",
                expected_output="A short summary",
                agent=agent,
                tools=[lookup] if step == 3 else [],  # task tools add to the agent's
                context=tasks[-1:],
            )
        )
    return Ensemble(
        tasks=tasks,
        review_handler=reviewer,
        review_policy=ReviewPolicy.AFTER_EVERY_TASK,
        listeners=[listener],
    )


@dataclass
class CountingListener:
    """Counts the model answers the client actually received."""

    answers: int = 0

    def on_event(self, event: EnsembleEvent) -> None:
        if isinstance(event, LLMCallCompleted):
            self.answers += 1


@dataclass
class RunFigures:
    seed: int
    completed: bool
    outputs: int
    attempts: int
    answers: int
    faults: int
    seconds: float
    kinds: Counter[str] = field(default_factory=Counter)

    @property
    def retries(self) -> int:
        # every attempt beyond one per model call; a failed run's last call got no answer
        return self.attempts - self.answers - (0 if self.completed else 1)


@dataclass
class Figures:
    runs: list[RunFigures] = field(default_factory=list)

    def summary(self) -> str:
        completed = sum(r.completed for r in self.runs)
        attempts = sum(r.attempts for r in self.runs)
        faults = sum(r.faults for r in self.runs)
        retries = sum(r.retries for r in self.runs)
        seconds = sum(r.seconds for r in self.runs)
        slowest = max(r.seconds for r in self.runs)
        kinds: Counter[str] = sum((r.kinds for r in self.runs), Counter())
        mix = ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))
        return (
            f"chaos: {len(self.runs)} runs, {completed} completed, "
            f"{len(self.runs) - completed} failed with TaskExecutionError; "
            f"{attempts} requests, {faults} faults injected ({faults / attempts:.0%}), "
            f"{retries} retries; wall time {seconds:.1f} s (slowest run {slowest:.2f} s)\n"
            f"faults by kind: {mix}"
        )


def check_outputs(outputs: list[TaskOutput]) -> None:
    """Each output is exactly the model's answer for its step, with its tool calls recorded."""
    for step, output in enumerate(outputs, start=1):
        assert output.raw == EXPECTED_RAW[step]
        assert [(c.name, c.is_success) for c in output.tool_calls] == EXPECTED_CALLS[step]
        assert output.llm_calls == len(PLANS[step]) + 1


async def run_once(
    server: OpenAIServer, llm: LLM, seed: int, *, fault_rate: float = FAULT_RATE
) -> RunFigures:
    server.reset()
    server.set_responder(model)
    server.set_chaos(fault_rate, FAULT_MIX, seed=seed)
    reviewer = ScriptedReviewHandler([Continue()] * 5)
    listener = CountingListener()
    ensemble = build_ensemble(llm, reviewer, listener)

    started = time.perf_counter()
    try:
        result = await asyncio.wait_for(ensemble.arun(), RUN_DEADLINE)
    except asyncio.TimeoutError:
        pytest.fail(f"seed {seed}: the run hung for {RUN_DEADLINE} s")
    except TaskExecutionError as error:
        outputs = error.completed_outputs
        failed_step = ensemble.tasks.index(error.task) + 1
        assert len(outputs) == failed_step - 1, f"seed {seed}: {error}"
        assert isinstance(error.__cause__, LLMError), f"seed {seed}: {error!r}"
        assert error.__cause__.attempts == MAX_ATTEMPTS, f"seed {seed}: {error}"
        completed = False
    else:
        outputs = result.task_outputs
        assert len(outputs) == 5, f"seed {seed}: {result.exit_reason}"
        reviewer.assert_all_used()
        completed = True
    seconds = time.perf_counter() - started

    check_outputs(outputs)
    # the reviewer saw each completed task's output, and nothing else
    assert [r.output for r in reviewer.requests] == [o.raw for o in outputs]

    arrivals = server.arrivals
    per_call = Counter(json.dumps(body, sort_keys=True) for body in arrivals)
    kinds = Counter(e.outcome[6:] for e in server.log if e.outcome.startswith("chaos:"))
    kinds["slow"] = server.faults_injected - sum(kinds.values())  # logged only once served
    assert max(per_call.values()) <= MAX_ATTEMPTS, f"seed {seed}: a call was tried too often"
    figures = RunFigures(
        seed=seed,
        completed=completed,
        outputs=len(outputs),
        attempts=len(arrivals),
        answers=listener.answers,
        faults=server.faults_injected,
        seconds=seconds,
        kinds=kinds,
    )
    assert 0 <= figures.retries <= (MAX_ATTEMPTS - 1) * len(per_call), f"seed {seed}"
    return figures


# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    """One server for the module: each run resets its script, chaos seed and counters."""
    with OpenAIServer(socket_timeout=5.0) as server:
        yield server
    assert server.errors == [], f"openai_server handler errors: {server.errors}"


@pytest.fixture(scope="module")
def make_llm(server: OpenAIServer) -> Callable[..., LLM]:
    def make(**overrides: Any) -> LLM:
        settings: dict[str, Any] = {
            "api_base": server.base_url,
            "api_key": "sk-chaos-test-key",
            "retry_policy": POLICY,
            "timeout": CLIENT_TIMEOUT,
        }
        settings.update(overrides)
        return LLM(model="openai/test-model", **settings)

    return make


# -- the tests -------------------------------------------------------------------------------


async def test_without_faults_every_run_completes_with_the_exact_outputs(
    server: OpenAIServer, make_llm: Callable[..., LLM]
) -> None:
    # no slow faults here: a generous timeout keeps a busy machine from adding a retry
    figures = await run_once(server, make_llm(timeout=5.0), seed=0, fault_rate=0.0)

    assert figures.completed and figures.outputs == 5
    assert figures.retries == 0
    assert figures.attempts == sum(len(plan) + 1 for plan in PLANS.values())


async def test_thirty_percent_faults_never_lose_an_output_or_hang(
    server: OpenAIServer, make_llm: Callable[..., LLM], capsys: pytest.CaptureFixture[str]
) -> None:
    llm = make_llm()
    await run_once(server, llm, seed=-1, fault_rate=0.0)  # warm up: litellm import, first tools
    figures = Figures()
    for seed in range(1, RUNS + 1):
        figures.runs.append(await run_once(server, llm, seed))

    with capsys.disabled():
        print("\n" + figures.summary())
    attempts = sum(r.attempts for r in figures.runs)
    faults = sum(r.faults for r in figures.runs)
    assert 0.2 < faults / attempts < 0.4  # the mix really was about 30 % faults
    assert sum(r.retries for r in figures.runs) >= faults - sum(
        not r.completed for r in figures.runs
    )


async def test_a_provider_that_goes_down_mid_run_keeps_the_finished_outputs(
    server: OpenAIServer, make_llm: Callable[..., LLM]
) -> None:
    def down_from_step_3(body: dict[str, Any]) -> Reply:
        return Fault.http(503) if step_of(body) >= 3 else model(body)

    server.reset()
    server.set_responder(down_from_step_3)
    reviewer = ScriptedReviewHandler([Continue()] * 5)
    ensemble = build_ensemble(make_llm(timeout=5.0), reviewer, CountingListener())

    with pytest.raises(TaskExecutionError) as info:
        await asyncio.wait_for(ensemble.arun(), RUN_DEADLINE)

    assert info.value.task is ensemble.tasks[2]
    check_outputs(info.value.completed_outputs)
    assert len(info.value.completed_outputs) == 2
    assert isinstance(info.value.__cause__, LLMError)
    assert info.value.__cause__.status_code == 503
    assert info.value.__cause__.attempts == MAX_ATTEMPTS
    assert len(server.arrivals) == 2 + 3 + MAX_ATTEMPTS  # steps 1 and 2, then step 3's retries
    assert len(reviewer.requests) == 2


@pytest.mark.parametrize(
    "fault",
    [Fault.http(503), Fault(kind="hang", delay=SLOW_FAULT)],
    ids=["always-503", "always-too-slow"],
)
async def test_a_provider_that_always_fails_fails_in_bounded_time(
    server: OpenAIServer, make_llm: Callable[..., LLM], fault: Fault
) -> None:
    server.reset()
    server.set_responder(model)
    server.set_chaos(1.0, [fault], seed=0)
    ensemble = build_ensemble(make_llm(), ScriptedReviewHandler([]), CountingListener())

    started = time.perf_counter()
    with pytest.raises(TaskExecutionError) as info:
        await asyncio.wait_for(ensemble.arun(), RUN_DEADLINE)
    elapsed = time.perf_counter() - started

    assert info.value.completed_outputs == []
    assert isinstance(info.value.__cause__, LLMError)
    assert info.value.__cause__.attempts == MAX_ATTEMPTS
    assert len(server.arrivals) == MAX_ATTEMPTS
    # generous: four attempts, each cut at the client timeout at worst, with tiny backoffs
    assert elapsed < MAX_ATTEMPTS * CLIENT_TIMEOUT + 5.0


# -- the same team as a parallel graph -------------------------------------------------------


def build_graph(llm: LLM, reviewer: ScriptedReviewHandler) -> Ensemble:
    """Step 1, then steps 2-4 at once, then step 5 on all three: a diamond under faults."""
    sequential = build_ensemble(llm, reviewer, CountingListener())
    first, *middle, last = sequential.tasks
    for task in middle:
        task.context = [first]
    last.context = list(middle)
    return Ensemble(
        tasks=sequential.tasks,
        workflow=Workflow.PARALLEL,
        review_handler=reviewer,
        review_policy=ReviewPolicy.AFTER_EVERY_TASK,
    )


def step_of_output(output: TaskOutput) -> int:
    return int(output.task_description.split("]")[0].removeprefix("[step "))


async def test_a_parallel_graph_under_faults_never_loses_an_output_or_hangs(
    server: OpenAIServer, make_llm: Callable[..., LLM]
) -> None:
    llm = make_llm()
    completed = 0
    for seed in range(1, 11):
        server.reset()
        server.set_responder(model)
        server.set_chaos(FAULT_RATE, FAULT_MIX, seed=seed)
        reviewer = ScriptedReviewHandler([Continue()] * 5)
        ensemble = build_graph(llm, reviewer)
        try:
            result = await asyncio.wait_for(ensemble.arun(), RUN_DEADLINE)
        except asyncio.TimeoutError:
            pytest.fail(f"seed {seed}: the parallel run hung for {RUN_DEADLINE} s")
        except TaskExecutionError as error:
            outputs = error.completed_outputs
            assert isinstance(error.__cause__, LLMError), f"seed {seed}: {error!r}"
            assert error.task not in [ensemble.tasks[step_of_output(o) - 1] for o in outputs]
        else:
            outputs = result.task_outputs
            assert len(outputs) == 5, f"seed {seed}: {result.exit_reason}"
            completed += 1
        steps = [step_of_output(o) for o in outputs]
        assert steps == sorted(steps), "outputs come in the ensemble's task order"
        for output in outputs:
            step = step_of_output(output)
            assert output.raw == EXPECTED_RAW[step]
            assert [(c.name, c.is_success) for c in output.tool_calls] == EXPECTED_CALLS[step]
        # every kept output was reviewed (a review cut short by FAIL_FAST keeps no output)
        unreviewed = Counter(o.raw for o in outputs) - Counter(r.output for r in reviewer.requests)
        assert not unreviewed, f"seed {seed}"
    assert completed > 0
