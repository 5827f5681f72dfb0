"""AbstractAgentTool: the framework's execute adds metrics, logging, safety and approval."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Iterator

import pytest

from agentensemble.errors import ConfigurationError, ExitEarlyError, ToolExecutionError
from agentensemble.tools import (
    AbstractAgentTool,
    ToolContext,
    ToolResult,
    current_tool_context,
    use_tool_context,
)
from agentensemble_review import Continue, Edit, ExitEarly, ReviewRequest, ReviewTiming

# -- tools used below -----------------------------------------------------------------------


class Divide(AbstractAgentTool):
    """Divides 100 by the input: fails for bad input, raises for zero."""

    name = "divide"
    description = "Divide 100 by a number"

    def do_execute(self, input: str) -> ToolResult | str | None:
        if not input.strip().lstrip("-").isdigit():
            return ToolResult.failure(f"'{input}' is not a number")
        return str(100 // int(input))  # ZeroDivisionError for "0"


class Quiet(AbstractAgentTool):
    name = "quiet"
    description = "Returns None"

    def do_execute(self, input: str) -> None:
        return None


class AsyncEcho(AbstractAgentTool):
    name = "async_echo"
    description = "Echoes, asynchronously"

    async def ado_execute(self, input: str) -> str:
        await asyncio.sleep(0)
        return input


class Refuses(AbstractAgentTool):
    name = "refuses"
    description = "Raises ToolExecutionError"

    def do_execute(self, input: str) -> str:
        raise ToolExecutionError("the archive is closed on Sundays")


class Stops(AbstractAgentTool):
    name = "stops"
    description = "Stops the whole run"

    def do_execute(self, input: str) -> str:
        raise ExitEarlyError("user pressed the big red button")


class Misconfigured(AbstractAgentTool):
    name = "misconfigured"
    description = "Raises ConfigurationError"

    def do_execute(self, input: str) -> str:
        raise ConfigurationError("no API key for the weather service")


class DeleteFile(AbstractAgentTool):
    """A dangerous tool: every call must be approved; records what it actually ran on."""

    name = "delete_file"
    description = "Delete a file"
    requires_approval = True

    def __init__(self) -> None:
        self.deleted: list[str] = []

    def do_execute(self, input: str) -> str:
        self.deleted.append(input)
        return f"deleted {input}"


class Shell(AbstractAgentTool):
    """Asks for approval only when the command looks dangerous."""

    name = "shell"
    description = "Run a shell command"

    def requires_approval(self, command: str) -> bool:
        return command.startswith("rm ")

    def do_execute(self, input: str) -> str:
        return f"ran {input}"


class FakeHandler:
    """A review handler that answers from a script and records every request."""

    def __init__(self, *decisions: object) -> None:
        self.decisions = list(decisions)
        self.requests: list[ReviewRequest] = []

    def review(self, request: ReviewRequest) -> object:
        self.requests.append(request)
        return self.decisions.pop(0)


class AsyncFakeHandler(FakeHandler):
    """The same, answering through ``areview`` (on the agent's event loop)."""

    def __init__(self, *decisions: object) -> None:
        super().__init__(*decisions)
        self.threads: list[str] = []

    async def areview(self, request: ReviewRequest) -> object:
        self.threads.append(threading.current_thread().name)
        return self.review(request)


@pytest.fixture
def reviewed() -> Iterator[FakeHandler]:
    """A context whose review handler continues once (extend ``decisions`` as needed)."""
    handler = FakeHandler()
    with use_tool_context(ToolContext(review_handler=handler, task_description="Clean up")):
        yield handler


# -- results and exception safety -----------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.usefixtures("tool_context")
@pytest.mark.parametrize(
    ("tool_input", "expected"),
    [
        ("4", ToolResult.success("25")),
        ("four", ToolResult.failure("'four' is not a number")),
        ("0", ToolResult.failure("ZeroDivisionError: integer division or modulo by zero")),
    ],
)
async def test_results_and_exceptions_never_escape(tool_input: str, expected: ToolResult) -> None:
    assert await Divide().aexecute(tool_input) == expected
    assert Divide().execute(tool_input) == expected


@pytest.mark.usefixtures("tool_context")
def test_none_is_success_with_empty_output() -> None:
    assert Quiet().execute("x") == ToolResult.success("")


@pytest.mark.usefixtures("tool_context")
def test_tool_execution_error_message_goes_to_the_model_as_is() -> None:
    assert Refuses().execute("x") == ToolResult.failure("the archive is closed on Sundays")


@pytest.mark.anyio
@pytest.mark.usefixtures("tool_context")
async def test_exit_early_and_configuration_errors_stop_the_run() -> None:
    with pytest.raises(ExitEarlyError):
        await Stops().aexecute("x")
    with pytest.raises(ConfigurationError, match="no API key"):
        await Misconfigured().aexecute("x")
    with pytest.raises(ExitEarlyError):
        Stops().execute("x")


@pytest.mark.anyio
@pytest.mark.usefixtures("tool_context")
async def test_async_body_runs_from_both_sides() -> None:
    assert (await AsyncEcho().aexecute("hi")).output == "hi"
    assert AsyncEcho().execute("hi").output == "hi"


@pytest.mark.anyio
@pytest.mark.usefixtures("tool_context")
async def test_sync_body_runs_in_a_worker_thread() -> None:
    threads: list[str] = []

    class Where(AbstractAgentTool):
        name = "where"
        description = "Reports its thread"

        def do_execute(self, input: str) -> str:
            threads.append(threading.current_thread().name)
            assert current_tool_context().agent_role == ""  # the context reaches the thread
            return "ok"

    await Where().aexecute("")
    assert threads[0] != threading.current_thread().name


# -- execute is the framework's ---------------------------------------------------------------


@pytest.mark.parametrize("method", ["execute", "aexecute"])
def test_subclasses_cannot_override_execute(method: str) -> None:
    def body(self: object, input: str) -> ToolResult:
        return ToolResult.success("bypassed")

    with pytest.raises(TypeError, match=f"must not override {method}"):
        type("Bypass", (AbstractAgentTool,), {method: body, "name": "bypass"})


# -- metrics --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_metrics_per_tool_object_and_per_run(tool_context: ToolContext) -> None:
    divide = Divide()
    for tool_input in ["4", "5", "four", "0"]:
        await divide.aexecute(tool_input)
    Refuses().execute("x")

    mine = divide.metrics
    assert (mine.calls, mine.successes, mine.failures, mine.errors) == (4, 2, 1, 1)
    assert mine.total_duration.total_seconds() > 0
    assert mine.average_duration == mine.total_duration / 4

    run = tool_context.metrics.snapshot()
    assert (run["divide"].calls, run["divide"].errors) == (4, 1)
    assert (run["refuses"].calls, run["refuses"].failures) == (1, 1)


def test_each_context_has_its_own_registry() -> None:
    divide = Divide()
    first, second = ToolContext(), ToolContext()
    with use_tool_context(first):
        divide.execute("1")
    with use_tool_context(second):
        divide.execute("2")
        divide.execute("3")
    assert first.metrics["divide"].calls == 1
    assert second.metrics["divide"].calls == 2
    assert divide.metrics.calls == 3


# -- logging --------------------------------------------------------------------------------


def _lines(logs: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in logs.records if r.levelno == level]


@pytest.mark.usefixtures("tool_context")
def test_logs_one_info_line_per_call(tool_logs: pytest.LogCaptureFixture) -> None:
    Divide().execute("4")
    assert _lines(tool_logs, logging.INFO) == ["divide(4) -> 25"]
    record = next(r for r in tool_logs.records if r.levelno == logging.INFO)
    assert record.tool == "divide"  # type: ignore[attr-defined]
    assert record.duration_ms >= 0  # type: ignore[attr-defined]


@pytest.mark.usefixtures("tool_context")
def test_logs_failures_and_exceptions_at_warning(tool_logs: pytest.LogCaptureFixture) -> None:
    Divide().execute("four")
    Divide().execute("0")
    assert _lines(tool_logs, logging.WARNING) == [
        "divide(four) -> Error: 'four' is not a number",
        "divide(0) -> Error: ZeroDivisionError: integer division or modulo by zero",
    ]
    crash = [r for r in tool_logs.records if r.levelno == logging.WARNING][1]
    assert crash.exc_info is not None  # the traceback of an unexpected exception is kept


@pytest.mark.usefixtures("tool_context")
def test_info_truncates_to_200_chars_and_debug_has_everything(
    tool_logs: pytest.LogCaptureFixture,
) -> None:
    long_input = "x" * 500

    class Echo(AbstractAgentTool):
        name = "echo"
        description = "Echo"

        def do_execute(self, input: str) -> str:
            return input

    Echo().execute(long_input)
    (info,) = _lines(tool_logs, logging.INFO)
    preview = "x" * 199 + "…"
    assert info == f"echo({preview}) -> {preview}"
    debug = next(r for r in tool_logs.records if r.levelno == logging.DEBUG)
    assert debug.input == long_input  # type: ignore[attr-defined]
    assert debug.output == long_input  # type: ignore[attr-defined]


@pytest.mark.usefixtures("tool_context")
def test_configuration_errors_are_logged_at_error(tool_logs: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ConfigurationError):
        Misconfigured().execute("x")
    assert _lines(tool_logs, logging.ERROR) == [
        "misconfigured(x) stopped the run: no API key for the weather service"
    ]


# -- approval -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_approval_continue_runs_the_tool(reviewed: FakeHandler) -> None:
    reviewed.decisions.append(Continue())
    tool = DeleteFile()
    assert await tool.aexecute("/tmp/a") == ToolResult.success("deleted /tmp/a")
    (request,) = reviewed.requests
    assert request.timing is ReviewTiming.DURING_EXECUTION
    assert (request.tool_name, request.output) == ("delete_file", "/tmp/a")
    assert request.task_description == "Clean up"


@pytest.mark.anyio
async def test_approval_edit_runs_the_tool_on_the_revised_input(reviewed: FakeHandler) -> None:
    reviewed.decisions.append(Edit("/tmp/a.bak"))
    tool = DeleteFile()
    assert (await tool.aexecute("/tmp/a")).output == "deleted /tmp/a.bak"
    assert tool.deleted == ["/tmp/a.bak"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("decision", "message"),
    [
        (ExitEarly("not that file"), "Rejected by reviewer: not that file"),
        (ExitEarly(), "Rejected by reviewer: no reason given"),
    ],
)
async def test_approval_rejection_fails_the_call_without_running_it(
    reviewed: FakeHandler, decision: ExitEarly, message: str
) -> None:
    reviewed.decisions.append(decision)
    tool = DeleteFile()
    assert await tool.aexecute("/etc/passwd") == ToolResult.failure(message)
    assert tool.deleted == []
    assert tool.metrics.failures == 1


def test_approval_without_a_handler_is_a_configuration_error(tool_context: ToolContext) -> None:
    tool = DeleteFile()
    with pytest.raises(ConfigurationError, match="requires approval but no review handler"):
        tool.execute("/tmp/a")
    assert tool.deleted == []


@pytest.mark.anyio
async def test_conditional_approval_asks_only_when_the_callable_says_so(
    reviewed: FakeHandler,
) -> None:
    reviewed.decisions.append(ExitEarly("no"))
    assert (await Shell().aexecute("ls")).output == "ran ls"
    assert await Shell().aexecute("rm -rf /") == ToolResult.failure("Rejected by reviewer: no")
    assert [r.output for r in reviewed.requests] == ["rm -rf /"]


@pytest.mark.anyio
async def test_sync_tool_in_worker_thread_reaches_an_async_handler_on_the_loop() -> None:
    handler = AsyncFakeHandler(Continue())
    loop_thread = threading.current_thread().name

    class Reviewed(AbstractAgentTool):
        name = "reviewed"
        description = "Asks for approval itself, from its worker thread"

        def do_execute(self, input: str) -> str:
            decision = self.request_approval(f"About to publish {input}")
            return "published" if isinstance(decision, Continue) else "held back"

    with use_tool_context(ToolContext(review_handler=handler)):
        assert (await Reviewed().aexecute("report")).output == "published"
    assert handler.threads == [loop_thread]  # areview ran on the agent's loop
    (request,) = handler.requests
    assert (request.output, request.tool_name) == ("About to publish report", "reviewed")


@pytest.mark.usefixtures("tool_context")
def test_request_approval_auto_approves_without_a_handler() -> None:
    assert isinstance(DeleteFile().request_approval("anything"), Continue)
    assert isinstance(asyncio.run(DeleteFile().arequest_approval("anything")), Continue)


def test_request_approval_passes_timeout_and_on_timeout() -> None:
    from datetime import timedelta

    from agentensemble_review import OnTimeoutAction

    handler = FakeHandler(ExitEarly("late"))
    with use_tool_context(ToolContext(review_handler=handler)):
        decision = DeleteFile().request_approval(
            "wipe?", timeout=30, on_timeout=OnTimeoutAction.CONTINUE
        )
    assert decision == ExitEarly("late")
    (request,) = handler.requests
    assert request.timeout == timedelta(seconds=30)
    assert request.on_timeout is OnTimeoutAction.CONTINUE


def test_review_errors_stop_the_run_instead_of_failing_the_call() -> None:
    from agentensemble_review import InvalidReviewDecisionError

    tool = DeleteFile()
    with (
        use_tool_context(ToolContext(review_handler=FakeHandler("yes please"))),
        pytest.raises(InvalidReviewDecisionError),
    ):
        tool.execute("/tmp/a")
    assert tool.deleted == []


def test_tools_run_without_the_review_package_when_no_approval_is_needed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [m for m in sys.modules if m.startswith("agentensemble_review")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "agentensemble_review", None)  # import raises ImportError
    with use_tool_context(ToolContext()):
        assert Divide().execute("4").output == "25"
        assert Divide().execute("0").is_success is False
        assert repr(Divide().request_approval("ok?")) == "Continue()"  # still auto-approves
