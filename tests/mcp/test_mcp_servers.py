"""MCP servers in tools=[...]: a real server (the ``mcp`` package's MCPServer) over stdio in a
subprocess and over loopback HTTP, run by whole ensembles with a scripted model."""

from __future__ import annotations

import asyncio
import re
import sys
import time
from pathlib import Path

import pytest
from mcp_helpers import SERVER, free_port, process_alive, serve

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.errors import ConfigurationError, TaskExecutionError
from agentensemble.mcp import MCPServerError, MCPServerHTTP, MCPServerStdio
from agentensemble.testing import FunctionChatModel, ScriptedChatModel, tool_call, tool_calls
from agentensemble.tools.source import open_tool_sources
from agentensemble_review import Continue, Edit, ExitEarly, ScriptedReviewHandler

pytestmark = pytest.mark.anyio


def stdio_server(**options: object) -> MCPServerStdio:
    return MCPServerStdio(sys.executable, [str(SERVER)], **options)  # type: ignore[arg-type]


def one_task(server: object, model: object, **ensemble: object) -> Ensemble:
    agent = Agent(role="Calculator", goal="Use the tools", tools=[server], llm=model)
    return Ensemble(tasks=[Task(description="Compute", agent=agent)], **ensemble)  # type: ignore[arg-type]


async def test_a_stdio_server_s_tools_are_offered_called_and_fed_back() -> None:
    model = ScriptedChatModel([tool_call("add", {"a": 2, "b": 40}), "The sum is 42"])
    output = await one_task(stdio_server(), model).arun()

    specs = {spec["function"]["name"]: spec["function"] for spec in model.requests[0].tools or []}
    assert set(specs) == {"add", "pid", "fail", "shout_text", "big", "hostile_word", "die"}
    assert specs["add"]["description"] == "Add two integers."
    assert specs["add"]["parameters"]["required"] == ["a", "b"]
    assert model.requests[1].tool_results == ["42"]
    record = output.task_outputs[0].tool_calls[0]
    assert (record.name, record.output, record.is_success) == ("add", "42", True)
    assert output.raw == "The sum is 42"


async def test_arguments_are_validated_against_the_server_schema_before_sending() -> None:
    model = ScriptedChatModel(
        [tool_call("add", {"a": "two", "b": 1}), tool_call("add", {"a": 1}), "gave up"]
    )
    await one_task(stdio_server(), model).arun()

    (wrong_type,) = model.requests[1].tool_results
    assert wrong_type.startswith("Error: Invalid arguments for 'add': a: 'two' is not of type")
    (missing,) = model.requests[2].tool_results
    assert missing == "Error: Invalid arguments for 'add': arguments: 'b' is a required property"


async def test_arguments_naming_a_key_twice_are_refused_not_guessed() -> None:
    model = ScriptedChatModel([tool_call("add", '{"a": 1, "a": 100, "b": 1}'), "gave up"])
    output = await one_task(stdio_server(), model).arun()

    (result,) = model.requests[1].tool_results
    assert result.startswith("Error: Invalid arguments for 'add': duplicate key 'a'")
    assert output.task_outputs[0].tool_calls[0].is_success is False


async def test_the_reviewer_sees_the_arguments_that_will_be_sent_and_may_edit_them() -> None:
    handler = ScriptedReviewHandler([Edit(revised_output='{"a": 10, "b": 5}')])
    model = ScriptedChatModel([tool_call("add", '{ "b" : 2, "a" : 1 }'), "done"])
    await one_task(stdio_server(requires_approval=True), model, review_handler=handler).arun()

    assert handler.requests[0].output == '{"b": 2, "a": 1}'
    assert model.requests[1].tool_results == ["15"]


async def test_a_tool_error_from_the_server_reaches_the_model_as_an_error() -> None:
    model = ScriptedChatModel([tool_call("fail", {"message": "disk is full"}), "noted"])
    output = await one_task(stdio_server(), model).arun()

    assert model.requests[1].tool_results == ["Error: Error executing tool fail: disk is full"]
    assert output.task_outputs[0].tool_calls[0].is_success is False


async def test_a_server_s_own_output_pattern_cannot_freeze_the_event_loop() -> None:
    """The SDK checked structured content against the server's output schema with ``re`` on the
    event loop: a server choosing both the pattern and the value froze the process for hours."""
    model = ScriptedChatModel([tool_call("hostile_word"), "noted"])
    output = await asyncio.wait_for(one_task(stdio_server(), model).arun(), 60)

    (result,) = model.requests[1].tool_results  # undecided in time: not refused on that account
    assert "a" * 40 + "!" in result
    assert output.raw == "noted"


async def test_the_sdk_s_call_tool_still_calls_our_result_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Our check replaces the SDK's by overriding ``ClientSession.validate_tool_result``: an
    SDK whose ``call_tool`` stopped calling it would run its own unbounded check again."""
    from agentensemble.mcp._session import CheckedSession

    checked: list[tuple[str, object]] = []
    ours = CheckedSession.validate_tool_result

    async def spy(self: CheckedSession, name: str, result: object) -> None:
        checked.append((name, getattr(result, "structured_content", None)))
        await ours(self, name, result)

    monkeypatch.setattr(CheckedSession, "validate_tool_result", spy)
    model = ScriptedChatModel([tool_call("add", {"a": 2, "b": 3}), tool_call("hostile_word"), "ok"])
    await asyncio.wait_for(one_task(stdio_server(), model).arun(), 60)

    assert [name for name, _ in checked] == ["add", "hostile_word"]
    assert checked[0][1] == {"result": 5}


async def test_names_are_made_safe_prefixed_and_filtered() -> None:
    server = stdio_server(prefix="calc", include=["add", "shout-text"])
    model = ScriptedChatModel([tool_call("calc_shout_text", {"text": "hi"}), "done"])
    await one_task(server, model).arun()

    names = [spec["function"]["name"] for spec in model.requests[0].tools or []]
    assert names == ["calc_add", "calc_shout_text"]
    assert model.requests[1].tool_results == ["HI"]


async def test_exclude_drops_tools() -> None:
    model = ScriptedChatModel(["nothing to do"])
    await one_task(stdio_server(exclude=["die", "big", "pid", "hostile_word"]), model).arun()

    names = [spec["function"]["name"] for spec in model.requests[0].tools or []]
    assert names == ["add", "fail", "shout_text"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"include": ["add", "sum"]}, "include names tool(s) the server does not list: 'sum'"),
        ({"requires_approval": ["delete"]}, "requires_approval names tool(s) the server"),
        ({"exclude": ["nope"]}, "exclude names tool(s) the server does not list: 'nope'"),
    ],
)
async def test_a_filter_naming_an_unknown_tool_fails_the_run_before_any_model_call(
    options: dict[str, object], message: str
) -> None:
    model = ScriptedChatModel(["never"])
    ensemble = one_task(stdio_server(**options), model, review_handler=ScriptedReviewHandler([]))
    with pytest.raises(MCPServerError, match=re.escape(message)):
        await ensemble.arun()
    assert model.requests == []


async def test_output_over_the_cap_is_cut_and_says_so() -> None:
    model = ScriptedChatModel([tool_call("big", {"size": 5000}), "ok"])
    await one_task(stdio_server(max_output_chars=1000), model).arun()

    (result,) = model.requests[1].tool_results
    assert result == "x" * 1000 + "\n[output cut at 1000 characters]"


async def test_one_server_process_serves_every_task_and_is_gone_after_the_run() -> None:
    server = stdio_server()
    model = ScriptedChatModel([tool_call("pid"), "first", tool_call("pid"), "second"])
    agent = Agent(role="Worker", goal="Report", tools=[server], llm=model)
    tasks = [Task(description="One", agent=agent), Task(description="Two", tools=[server])]
    output = await Ensemble(tasks=tasks, llm=model).arun()

    pids = {int(out.tool_calls[0].output) for out in output.task_outputs}
    assert len(pids) == 1
    assert not process_alive(pids.pop())
    assert server.tools() == ()


async def test_the_server_is_stopped_when_the_run_fails() -> None:
    def model_fn(messages: list[dict[str, object]], tools: object) -> object:
        if messages[-1].get("role") == "tool":
            raise RuntimeError("the provider fell over")
        return tool_call("pid")

    model = FunctionChatModel(model_fn)  # type: ignore[arg-type]
    with pytest.raises(TaskExecutionError, match="the provider fell over"):
        await one_task(stdio_server(), model).arun()

    pid = int(str(model.requests[1].tool_results[0]))
    assert not process_alive(pid)


async def test_the_server_is_stopped_when_the_run_is_cancelled() -> None:
    reached = asyncio.Event()
    pids: list[int] = []

    async def model_fn(messages: list[dict[str, object]], tools: object) -> object:
        if messages[-1].get("role") == "tool":
            pids.append(int(str(messages[-1]["content"])))
            reached.set()
            await asyncio.Event().wait()  # hangs until cancelled
        return tool_call("pid")

    run = asyncio.ensure_future(one_task(stdio_server(), FunctionChatModel(model_fn)).arun())  # type: ignore[arg-type]
    await asyncio.wait_for(reached.wait(), timeout=60)
    assert process_alive(pids[0])
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert not process_alive(pids[0])


async def test_a_server_that_dies_mid_run_fails_the_call_and_the_model_is_told() -> None:
    model = ScriptedChatModel([tool_call("die"), tool_call("add", {"a": 1, "b": 1}), "it died"])
    output = await one_task(stdio_server(), model).arun()

    (died,) = model.requests[1].tool_results
    assert died.startswith("Error: MCP server '")
    assert "failed to answer the call to 'die'" in died
    assert "test server: dying on request" in died  # its stderr, quoted
    (after,) = model.requests[2].tool_results
    assert after.startswith("Error: MCP server '")
    assert output.raw == "it died"


@pytest.mark.parametrize(
    ("command", "args", "expected"),
    [
        ("/no/such/mcp-server", [], "MCP server '/no/such/mcp-server' could not start: "),
        (sys.executable, [str(SERVER), "crash"], "test server: refusing to start"),
    ],
)
async def test_a_server_that_cannot_start_fails_the_run_before_any_model_call(
    command: str, args: list[str], expected: str
) -> None:
    model = ScriptedChatModel(["never"])
    with pytest.raises(MCPServerError) as caught:
        await one_task(MCPServerStdio(command, args), model).arun()
    assert expected in str(caught.value)
    assert command in str(caught.value)
    assert model.requests == []


async def test_secrets_passed_to_a_server_never_show_in_its_quoted_stderr() -> None:
    server = MCPServerStdio(
        sys.executable, [str(SERVER), "crash"], env={"MCP_TEST_SECRET": "s3cr3t-value-for-test"}
    )
    with pytest.raises(MCPServerError) as caught:
        await one_task(server, ScriptedChatModel(["never"])).arun()
    assert "token in use: " in str(caught.value)
    assert "s3cr3t-value-for-test" not in str(caught.value)


def test_construction_starts_nothing_and_checks_the_settings() -> None:
    server = stdio_server()
    started = time.perf_counter()
    Agent(role="A", goal="B", tools=[server])
    assert server.tools() == ()
    assert time.perf_counter() - started < 5  # no subprocess was waited for

    for options, message in [
        ({"prefix": "bad prefix"}, "prefix"),
        ({"include": "add"}, "include must be a list of tool names"),
        ({"requires_approval": "add"}, "requires_approval must be a list of tool names"),
        ({"timeout": 0}, "timeout must be a positive number"),
    ]:
        with pytest.raises((ConfigurationError, ValueError), match=message):
            stdio_server(**options)
    with pytest.raises(ConfigurationError, match="command must be a non-blank string"):
        MCPServerStdio(" ")
    with pytest.raises(ConfigurationError, match="url must start with http"):
        MCPServerHTTP("127.0.0.1:8000/mcp")


async def test_a_duplicate_name_names_both_origins() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Local add."""
        return a + b

    agent = Agent(role="A", goal="B", tools=[stdio_server(include=["add"]), add])
    ensemble = Ensemble(tasks=[Task(description="Go", agent=agent)], llm=ScriptedChatModel())
    with pytest.raises(ConfigurationError) as caught:
        await ensemble.arun()
    message = str(caught.value)
    assert "Duplicate tool name: 'add'" in message
    assert f"from tool 'add' of MCP server '{sys.executable} {SERVER}'" in message
    assert "from function" in message


async def test_approval_listed_tools_go_through_the_reviewer() -> None:
    handler = ScriptedReviewHandler([ExitEarly("not today"), Continue()])
    model = ScriptedChatModel(
        [tool_call("add", {"a": 1, "b": 2}), tool_call("add", {"a": 3, "b": 4}), "done"]
    )
    server = stdio_server(requires_approval=["add"])
    await one_task(server, model, review_handler=handler).arun()

    assert model.requests[1].tool_results == ["Error: Rejected by reviewer: not today"]
    assert model.requests[2].tool_results == ["7"]
    assert [r.tool_name for r in handler.requests] == ["add", "add"]
    assert handler.requests[0].output == '{"a": 1, "b": 2}'


@pytest.mark.parametrize("requires_approval", [True, ["add"]])
def test_approval_without_a_review_handler_fails_when_the_ensemble_is_built(
    requires_approval: bool | list[str],
) -> None:
    server = stdio_server(requires_approval=requires_approval)
    named = "the tools of MCP server" if requires_approval is True else "add of MCP server"
    with pytest.raises(ConfigurationError, match=f"{named} .* require approval .* no review_han"):
        one_task(server, ScriptedChatModel(["never"]))
    assert server.tools() == ()  # nothing was started to find this out


async def test_a_streamable_http_server_is_used_like_any_tool(http_url: str) -> None:
    server = MCPServerHTTP(http_url, headers={"X-Test": "yes"}, prefix="remote")
    model = ScriptedChatModel([tool_call("remote_add", {"a": 5, "b": 6}), "eleven"])
    output = await one_task(server, model).arun()

    assert model.requests[1].tool_results == ["11"]
    assert output.raw == "eleven"


async def test_an_sse_server_is_used_like_any_tool(sse_url: str) -> None:
    server = MCPServerHTTP(sse_url, transport="sse")
    model = ScriptedChatModel([tool_call("shout_text", {"text": "sse"}), "done"])
    await one_task(server, model).arun()

    assert model.requests[1].tool_results == ["SSE"]


async def test_an_unreachable_http_server_fails_the_run_naming_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    model = ScriptedChatModel(["never"])
    with pytest.raises(MCPServerError, match=re.escape(f"MCP server '{url}' could not start")):
        await one_task(MCPServerHTTP(url, startup_timeout=20), model).arun()
    assert model.requests == []


def pid_from(path: Path) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if text.strip():
            return int(text)
        time.sleep(0.05)
    raise AssertionError(f"the test server never wrote {path}")


async def test_a_server_that_never_answers_its_handshake_is_stopped_and_fails_the_run(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "server.pid"
    server = MCPServerStdio(
        sys.executable,
        [str(SERVER), "hang"],
        env={"MCP_TEST_PID_FILE": str(pid_file)},
        startup_timeout=3,
    )
    model = ScriptedChatModel(["never"])
    with pytest.raises(MCPServerError, match="did not start within 3 s"):
        await one_task(server, model).arun()
    assert model.requests == []
    assert not process_alive(pid_from(pid_file))


async def test_a_server_refused_after_listing_is_stopped_too(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    server = stdio_server(include=["nope"], env={"MCP_TEST_PID_FILE": str(pid_file)})
    with pytest.raises(MCPServerError, match="include names tool"):
        await one_task(server, ScriptedChatModel(["never"])).arun()
    assert not process_alive(pid_from(pid_file))


async def test_several_calls_in_one_turn_share_the_server() -> None:
    calls = tool_calls(
        ("add", {"a": 1, "b": 1}), ("add", {"a": 2, "b": 2}), ("shout_text", {"text": "x"})
    )
    model = ScriptedChatModel([calls, "done"])
    await one_task(stdio_server(), model).arun()

    assert model.requests[1].tool_results == ["2", "4", "X"]


async def test_a_call_from_another_thread_and_loop_reaches_the_server() -> None:
    server = stdio_server(include=["add"])
    async with open_tool_sources([server]):
        (add,) = server.tools()
        # a sync caller in a worker thread (as a pipeline step or a nested run would be)
        result = await asyncio.to_thread(add.execute, '{"a": 20, "b": 22}')
    assert result.output == "42"


def test_the_sync_run_facade_starts_and_stops_the_server() -> None:
    model = ScriptedChatModel([tool_call("pid"), "done"])
    output = one_task(stdio_server(), model).run()

    pid = int(output.task_outputs[0].tool_calls[0].output)
    assert not process_alive(pid)


async def test_without_the_mcp_package_the_run_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # import mcp now raises ImportError
    model = ScriptedChatModel(["never"])
    with pytest.raises(MCPServerError, match=re.escape('pip install "agentensemble-py[mcp]"')):
        await one_task(stdio_server(), model).arun()
    assert model.requests == []


async def test_a_nested_run_shares_the_server_of_the_run_around_it() -> None:
    server = stdio_server(include=["pid"])
    inner_model = ScriptedChatModel([tool_call("pid"), "inner done"])

    @tool
    def ask_inner_team() -> str:
        """Run the inner team (a sync tool: it calls the sync facade from a worker thread)."""
        inner = one_task(server, inner_model)
        return inner.run().task_outputs[0].tool_calls[0].output

    model = ScriptedChatModel([tool_call("pid"), tool_call("ask_inner_team"), "outer done"])
    agent = Agent(role="Lead", goal="Delegate", tools=[server, ask_inner_team], llm=model)
    await Ensemble(tasks=[Task(description="Go", agent=agent)]).arun()

    (outer_pid,) = model.requests[1].tool_results
    (inner_pid,) = model.requests[2].tool_results
    assert inner_pid == outer_pid
    assert not process_alive(int(outer_pid))


async def test_an_http_server_that_goes_away_mid_run_fails_the_call_and_the_model_is_told() -> None:
    servers = serve("http")
    url = next(servers)
    stopped = False

    def model_fn(messages: list[dict[str, object]], tools: object) -> object:
        nonlocal stopped
        if messages[-1].get("role") != "tool":
            return tool_call("add", {"a": 1, "b": 2})
        if not stopped:
            stopped = True
            next(servers, None)  # runs the fixture's teardown: the server process is stopped
            return tool_call("add", {"a": 3, "b": 4})
        return "the server went away"

    model = FunctionChatModel(model_fn)  # type: ignore[arg-type]
    server = MCPServerHTTP(url, timeout=20)
    output = await asyncio.wait_for(one_task(server, model).arun(), timeout=120)

    first, second = output.task_outputs[0].tool_calls
    assert (first.output, first.is_success) == ("3", True)
    assert second.is_success is False
    assert f"MCP server '{url}' failed to answer the call to 'add'" in str(
        model.requests[2].tool_results[0]
    )
    assert output.raw == "the server went away"
