"""The executor's tool loop, driven by a scripted model: order, errors, limits, immediate return."""

import asyncio
import threading

import pytest

from agentensemble import (
    Agent,
    AgentTool,
    ConfigurationError,
    Ensemble,
    ExitEarlyError,
    ExitReason,
    MaxIterationsExceededError,
    ReturnBehavior,
    Task,
    TaskExecutionError,
    ToolCallCompleted,
    ToolExecutionError,
    ToolResult,
    tool,
)
from agentensemble.testing import ScriptedChatModel, text, tool_call, tool_calls


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def fail(reason: str) -> str:
    """Always fails."""
    raise ToolExecutionError(f"cannot do {reason}")


@tool
def boom() -> str:
    """Raises an unexpected exception."""
    raise RuntimeError("kaboom")


def run(model: ScriptedChatModel, *tools: object, max_iterations: int = 25, listeners=()):
    agent = Agent(
        role="Worker", goal="g", tools=list(tools), llm=model, max_iterations=max_iterations
    )
    return Ensemble(tasks=[Task(description="d", agent=agent)], listeners=list(listeners)).run()


def test_results_go_back_in_call_order_and_are_recorded() -> None:
    model = ScriptedChatModel(
        [tool_calls(("add", {"a": 1, "b": 2}), ("add", {"a": 10, "b": 20})), "33"]
    )
    output = run(model, add).task_outputs[0]
    assert model.requests[1].tool_results == ["3", "30"]
    assert [r.output for r in output.tool_calls] == ["3", "30"]
    assert output.tool_calls[0].arguments == '{"a": 1, "b": 2}'
    assert output.llm_calls == 2
    assert model.requests[0].tools is not None
    assert model.requests[0].tools[0]["function"]["name"] == "add"


@pytest.mark.parametrize(
    ("call", "error_fragment"),
    [
        (tool_call("fail", {"reason": "x"}), "Error: cannot do x"),
        (tool_call("boom"), "Error: kaboom"),
        (
            tool_call("missing", {}),
            "Error: Unknown tool 'missing'. Available tools: add, fail, boom",
        ),
        (tool_call("add", '{"a": 1, "b":'), "Error: Invalid arguments for 'add'"),
        (tool_call("add", {"a": 1, "b": "two"}), "b"),
    ],
)
def test_every_tool_failure_reaches_the_model_and_the_run_recovers(call, error_fragment) -> None:
    model = ScriptedChatModel([call, "recovered"])
    output = run(model, add, fail, boom).task_outputs[0]
    assert output.raw == "recovered"
    (result,) = model.requests[1].tool_results
    assert result.startswith("Error: ")
    assert error_fragment in result
    assert output.tool_calls[0].is_success is False


def test_calls_of_one_response_run_concurrently() -> None:
    # All four calls must be inside the tool at once to pass the barrier; run one after the
    # other, the first would wait alone and break it. No timing is asserted.
    barrier = threading.Barrier(4, timeout=30)

    @tool
    def meet(n: int) -> str:
        """Waits until every call of the turn has arrived."""
        barrier.wait()
        return str(n)

    model = ScriptedChatModel([tool_calls(*(("meet", {"n": i}) for i in range(4))), "done"])
    output = run(model, meet).task_outputs[0]
    assert [r.is_success for r in output.tool_calls] == [True] * 4
    assert [r.output for r in output.tool_calls] == ["0", "1", "2", "3"]


def test_async_tools_run_on_the_loop() -> None:
    @tool
    async def wait(ms: int) -> str:
        """Waits."""
        await asyncio.sleep(ms / 1000)
        return f"waited {ms}"

    model = ScriptedChatModel([tool_calls(("wait", {"ms": 20}), ("wait", {"ms": 10})), "ok"])
    assert run(model, wait).task_outputs[0].tool_calls[1].output == "waited 10"


def test_tool_call_limit_stops_then_fails_after_three_stops() -> None:
    model = ScriptedChatModel([tool_call("add", {"a": 1, "b": 1}) for _ in range(5)])
    with pytest.raises(TaskExecutionError) as info:
        run(model, add, max_iterations=2)
    error = info.value.__cause__
    assert isinstance(error, MaxIterationsExceededError)
    assert [r.is_success for r in error.tool_calls] == [True, True, False, False, False]
    assert model.requests[3].tool_results[0].startswith("STOP:")
    assert model.remaining == 0


def test_limit_reached_then_model_answers() -> None:
    model = ScriptedChatModel(
        [tool_calls(("add", {"a": 1, "b": 1}), ("add", {"a": 2, "b": 2})), "final"]
    )
    output = run(model, add, max_iterations=1).task_outputs[0]
    assert output.raw == "final"
    first, second = model.requests[1].tool_results
    assert first == "2" and second.startswith("STOP:")


class Lookup(AgentTool):
    name = "lookup"
    description = "Looks a key up."
    return_behavior = ReturnBehavior.IMMEDIATE

    def execute(self, input: str) -> ToolResult:
        return ToolResult.success(f"value of {input}", structured_output={"key": input})


def test_immediate_return_ends_the_task_without_another_model_call() -> None:
    model = ScriptedChatModel([tool_calls(("lookup", {"input": "a"}), ("lookup", {"input": "b"}))])
    output = run(model, Lookup()).task_outputs[0]
    assert output.returned_immediately is True
    assert output.raw == "value of a\n\nvalue of b"
    assert output.llm_calls == 1
    assert output.tool_calls[0].structured_output == {"key": "a"}
    model.assert_all_consumed()


def test_a_failure_in_the_response_prevents_immediate_return() -> None:
    model = ScriptedChatModel(
        [tool_calls(("lookup", {"input": "a"}), ("fail", {"reason": "r"})), "answer"]
    )
    output = run(model, Lookup(), fail).task_outputs[0]
    assert output.returned_immediately is False
    assert output.raw == "answer"


def test_exit_early_from_a_tool_stops_the_run_keeping_outputs() -> None:
    @tool
    def stop_now() -> str:
        """Stops the run."""
        raise ExitEarlyError("enough")

    model = ScriptedChatModel(["first task done", tool_call("stop_now")])
    agent = Agent(role="Worker", goal="g", tools=[stop_now], llm=model)
    t1, t2 = Task(description="one", agent=agent), Task(description="two", agent=agent)
    result = Ensemble(tasks=[t1, t2]).run()
    assert result.exit_reason is ExitReason.USER_EXIT_EARLY
    assert [o.raw for o in result.task_outputs] == ["first task done"]


def test_configuration_error_from_a_tool_stops_the_run() -> None:
    @tool
    def misconfigured() -> str:
        """Raises a configuration error."""
        raise ConfigurationError("wrong setup")

    model = ScriptedChatModel([tool_call("misconfigured")])
    with pytest.raises(TaskExecutionError) as info:
        run(model, misconfigured)
    assert isinstance(info.value.__cause__, ConfigurationError)


def test_tool_calls_are_emitted_as_events() -> None:
    class Collect:
        def __init__(self) -> None:
            self.records: list[str] = []

        def on_event(self, event: object) -> None:
            if isinstance(event, ToolCallCompleted):
                self.records.append(event.record.name)

    listener = Collect()
    model = ScriptedChatModel([tool_call("add", {"a": 1, "b": 1}), text("2")])
    run(model, add, listeners=[listener])
    assert listener.records == ["add"]


def test_history_never_holds_a_call_without_its_result() -> None:
    model = ScriptedChatModel([tool_calls(("add", {"a": 1, "b": 1}), ("nope", {})), "ok"])
    run(model, add)
    messages = model.requests[1].messages
    call_ids = [c["id"] for m in messages if m.get("tool_calls") for c in m["tool_calls"]]
    result_ids = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert call_ids == result_ids


def test_tool_metrics_add_up_over_the_whole_run() -> None:
    model = ScriptedChatModel(
        [
            tool_call("add", {"a": 1, "b": 1}),
            tool_calls(("add", {"a": 2, "b": 2}), ("fail", {"reason": "r"})),
            tool_call("boom"),
            "done",
        ]
    )
    metrics = run(model, add, fail, boom).tool_metrics
    assert (metrics["add"].successes, metrics["add"].failures) == (2, 0)
    assert metrics["fail"].failures == 1
    assert metrics["boom"].errors == 1


def test_secrets_in_tool_results_never_reach_the_model_records_or_an_immediate_output() -> None:
    """Attack: a tool's output or error quotes a credential (a connection string in a
    traceback, a key from its config). The model (a provider outside the process), the records
    (durable checkpoints, events, trace) and an IMMEDIATE tool's output get ``***``."""
    secret_url = "postgresql://app:Pg-pass-0xC0FFEE@db/prod"

    @tool
    def connect() -> str:
        """Connects to the database."""
        raise RuntimeError(f"cannot connect to {secret_url}")

    class Config(AgentTool):
        name = "config"
        description = "Reads the configuration."
        return_behavior = ReturnBehavior.IMMEDIATE

        def execute(self, input: str) -> ToolResult:
            return ToolResult.success("OPENAI_API_KEY=sk-live-exec0123456789abcdef")

    model = ScriptedChatModel([tool_call("connect"), tool_call("config", {"input": "x"})])
    output = run(model, connect, Config()).task_outputs[0]
    (failed,) = model.requests[1].tool_results
    assert failed == "Error: RuntimeError: cannot connect to postgresql://app:***@db/prod"
    assert output.raw == "OPENAI_API_KEY=***"
    dumped = output.model_dump_json()
    assert "Pg-pass-0xC0FFEE" not in dumped and "sk-live-exec" not in dumped
