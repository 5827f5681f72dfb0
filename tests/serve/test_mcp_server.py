"""mcp_server in process, through the real ``mcp`` client: tools, results, progress, errors,
cancellation, concurrency, reviews (the ensemble's own handler, and MCP elicitation)."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel
from serve_helpers import hardened_serving

from agentensemble import Agent, Ensemble, EnsembleFailed, Task, tool
from agentensemble.errors import ConfigurationError
from agentensemble.logging import register_secret
from agentensemble.serve import MCPReviewHandler, mcp_server
from agentensemble.serve.mcp_serving import mcp_http_app
from agentensemble.testing import FunctionChatModel, ScriptedChatModel, text
from agentensemble_review import Edit, ScriptedReviewHandler

pytestmark = pytest.mark.anyio

WAIT = 10.0  # seconds: every wait on a condition is bounded


class Brief(BaseModel):
    headline: str
    points: list[str]


class Events:
    """A listener keeping every event of the runs it watches."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def on_event(self, event: Any) -> None:
        self.events.append(event)

    def names(self) -> list[str]:
        return [type(event).__name__ for event in self.events]


def writer(llm: Any, **ensemble: Any) -> Ensemble:
    agent = Agent(role="Writer", goal="Explain {topic}", llm=llm)
    return Ensemble(
        tasks=[
            Task(description="Research {topic}", expected_output="Facts", agent=agent),
            Task(description="Write about {topic}", expected_output="An article", agent=agent),
        ],
        **ensemble,
    )


async def test_one_tool_per_ensemble_with_inputs_from_its_template_variables() -> None:
    server = mcp_server({"writer": writer(ScriptedChatModel([])), "other": writer(None)})
    async with Client(server) as client:
        listed = (await client.list_tools()).tools
    assert [t.name for t in listed] == ["writer", "other"]
    assert listed[0].input_schema["required"] == ["topic"]
    assert "1. Research {topic} (Writer)" in (listed[0].description or "")
    assert listed[0].output_schema is None


async def test_a_call_runs_the_ensemble_and_reports_progress_per_task_event() -> None:
    model = ScriptedChatModel([text("facts"), text("the article")])
    watcher = Events()
    server = mcp_server({"writer": writer(model, listeners=[watcher])})
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async with Client(server) as client:
        result = await client.call_tool("writer", {"topic": "AI"}, progress_callback=on_progress)

    assert not result.is_error
    assert result.content == [types.TextContent(text="the article")]
    assert progress == [
        (1.0, 4.0, "task 1/2 started: Research AI"),
        (2.0, 4.0, "task 1/2 done"),
        (3.0, 4.0, "task 2/2 started: Write about AI"),
        (4.0, 4.0, "task 2/2 done"),
    ]
    # the served run is reported like any other: the ensemble's own listeners see it all
    assert watcher.names()[0] == "EnsembleStarted" and watcher.names()[-1] == "EnsembleCompleted"


async def test_a_typed_last_task_gives_structured_content_and_an_output_schema() -> None:
    model = ScriptedChatModel([text('{"headline": "H", "points": ["a", "b"]}')])
    agent = Agent(role="Writer", goal="Brief on {topic}", llm=model)
    ensemble = Ensemble(tasks=[Task(description="Brief {topic}", agent=agent, output_type=Brief)])
    async with Client(mcp_server({"brief": ensemble})) as client:
        schema = (await client.list_tools()).tools[0].output_schema
        result = await client.call_tool("brief", {"topic": "AI"})
    assert schema is not None and set(schema["properties"]) == {"headline", "points"}
    assert result.structured_content == {"headline": "H", "points": ["a", "b"]}


async def test_a_missing_argument_is_a_tool_error_before_any_model_request() -> None:
    model = ScriptedChatModel([])  # any request would fail the script
    async with Client(mcp_server({"writer": writer(model)})) as client:
        result = await client.call_tool("writer", {})
        unknown = await client.call_tool("nope", {})
    assert result.is_error
    assert result.content == [types.TextContent(text="writer: missing argument(s): topic")]
    assert model.requests == []
    assert unknown.is_error and "unknown tool 'nope'" in unknown.content[0].text  # type: ignore[union-attr]


async def test_a_failed_run_is_an_error_result_with_redacted_text_and_the_server_lives_on() -> None:
    register_secret("my-served-secret-value")

    def fail(messages: Any, tools: Any) -> str:
        raise RuntimeError("provider said: key my-served-secret-value is wrong")

    async with Client(mcp_server({"writer": writer(FunctionChatModel(fail))})) as client:
        failed = await client.call_tool("writer", {"topic": "AI"})
        again = await client.list_tools()
    assert failed.is_error
    message = failed.content[0].text  # type: ignore[union-attr]
    assert message.startswith("writer failed: ")
    assert "my-served-secret-value" not in message and "***" in message
    assert again.tools  # the server still answers


async def test_concurrent_calls_are_concurrent_fresh_runs_from_the_factory() -> None:
    built: list[Ensemble] = []
    in_flight = 0
    both = asyncio.Event()

    async def answer(messages: Any, tools: Any) -> str:
        nonlocal in_flight
        in_flight += 1
        if in_flight >= 2:
            both.set()
        await asyncio.wait_for(both.wait(), WAIT)  # only passes if both runs are in flight
        return "done"

    def factory() -> Ensemble:
        agent = Agent(role="Solo", goal="Answer {question}", llm=FunctionChatModel(answer))
        ensemble = Ensemble(tasks=[Task(description="Answer {question}", agent=agent)])
        built.append(ensemble)
        return ensemble

    results: list[types.CallToolResult] = []
    async with Client(mcp_server({"solo": factory})) as client:

        async def call(question: str) -> None:
            results.append(await client.call_tool("solo", {"question": question}))

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as group:
                group.start_soon(call, "one")
                group.start_soon(call, "two")
    assert [r.is_error for r in results] == [False, False]
    assert len(built) == 3  # once to describe the tool, then once per call
    assert len({id(e) for e in built}) == 3


async def test_a_clients_cancellation_cancels_the_run() -> None:
    started = asyncio.Event()
    watcher = Events()

    async def hang(messages: Any, tools: Any) -> str:
        started.set()
        await asyncio.sleep(60)
        return "never"

    server = mcp_server({"slow": writer(FunctionChatModel(hang), listeners=[watcher])})
    async with Client(server) as client:
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "slow", {"topic": "AI"})
                await started.wait()
                group.cancel_scope.cancel()
            while "EnsembleFailed" not in watcher.names():
                await anyio.sleep(0.01)
    failed = [e for e in watcher.events if isinstance(e, EnsembleFailed)]
    assert isinstance(failed[0].error, asyncio.CancelledError)


@tool(requires_approval=True)
def publish(text: str) -> str:
    """Publish the text."""
    return "published"


def test_a_gated_tool_without_a_review_handler_refuses_to_start() -> None:
    ensemble = writer(ScriptedChatModel([]))
    ensemble.tasks[0].tools = [publish]  # changed after the ensemble checked itself
    with pytest.raises(ConfigurationError, match="cannot serve 'writer'"):
        mcp_server({"writer": ensemble})


@pytest.mark.parametrize("bad", [{}, {"has space": None}, []])
def test_bad_setups_are_refused(bad: Any) -> None:
    with pytest.raises(ConfigurationError):
        mcp_server(bad)


async def test_a_review_uses_the_ensembles_own_handler() -> None:
    reviewer = ScriptedReviewHandler([Edit("the reviewed article")])
    model = ScriptedChatModel([text("facts"), text("the draft")])
    ensemble = writer(model, review_handler=reviewer, review_policy="after_last_task")
    async with Client(mcp_server({"writer": ensemble})) as client:
        result = await client.call_tool("writer", {"topic": "AI"})
    assert result.content == [types.TextContent(text="the reviewed article")]
    reviewer.assert_all_used()


def reviewed_by_mcp(*replies: str) -> Ensemble:
    model = ScriptedChatModel([text(reply) for reply in replies])
    return writer(model, review_handler=MCPReviewHandler(), review_policy="after_last_task")


ERAS = pytest.mark.parametrize("mode", ["legacy", "auto"])  # a request mid-call; round trips


@ERAS
async def test_review_mcp_asks_the_clients_user_by_elicitation(mode: Any) -> None:
    asked: list[str] = []

    async def user(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        content = {"decision": "edit", "revised_output": "approved by the user"}
        return types.ElicitResult(action="accept", content=content)

    server = mcp_server({"writer": reviewed_by_mcp("facts", "the draft")})
    async with Client(server, elicitation_callback=user, mode=mode) as client:
        result = await client.call_tool("writer", {"topic": "AI"})
    assert result.content == [types.TextContent(text="approved by the user")]
    assert "the draft" in asked[0] and "Review (after_execution)" in asked[0]


@ERAS
@pytest.mark.parametrize(
    "answer",
    [
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="cancel"),
        types.ElicitResult(action="accept", content={"decision": "stop", "reason": "no"}),
        types.ElicitResult(action="accept", content={"decision": "maybe"}),
    ],
)
async def test_review_mcp_fails_closed_on_anything_but_approval(
    answer: types.ElicitResult, mode: Any
) -> None:
    async def user(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return answer

    server = mcp_server({"writer": reviewed_by_mcp("facts", "the unapproved draft")})
    async with Client(server, elicitation_callback=user, mode=mode) as client:
        result = await client.call_tool("writer", {"topic": "AI"})
    assert result.is_error
    assert "stopped before completing" in result.content[0].text  # type: ignore[union-attr]
    assert "unapproved" not in result.content[0].text  # type: ignore[union-attr]


@ERAS
async def test_review_mcp_with_a_client_without_elicitation_fails_closed(mode: Any) -> None:
    server = mcp_server({"writer": reviewed_by_mcp("facts", "the unapproved draft")})
    async with Client(server, mode=mode) as client:  # no elicitation_callback
        result = await client.call_tool("writer", {"topic": "AI"})
    assert result.is_error
    assert "stopped before completing" in result.content[0].text  # type: ignore[union-attr]


async def test_review_mcp_outside_a_served_call_stops_the_run() -> None:
    output = await reviewed_by_mcp("facts", "draft").arun({"topic": "AI"})
    assert output.exit_reason.value == "user_exit_early"


async def test_a_forged_request_state_is_an_error_and_approves_nothing() -> None:
    server = mcp_server({"writer": reviewed_by_mcp("facts", "draft")})
    async with Client(server) as client:
        forged = await client.session.call_tool(
            "writer", {"topic": "AI"}, request_state="guessed-state"
        )
    assert forged.is_error
    assert "unknown or expired request_state" in forged.content[0].text  # type: ignore[union-attr]


def reviewed_factory() -> Any:
    """A factory: each call a fresh run whose last output goes to ``review: mcp``."""
    return lambda: reviewed_by_mcp("facts", "the draft")


async def approve(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"decision": "approve"})


async def park(client: Client) -> types.InputRequiredResult:
    """Call the tool, take the question and never answer it (a client that walks away)."""
    asked = await client.session.call_tool("writer", {"topic": "AI"}, allow_input_required=True)
    assert isinstance(asked, types.InputRequiredResult)
    return asked


async def test_one_caller_cannot_park_every_run_and_fail_the_others_reviews(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over HTTP, one caller taking questions and never answering (again as each review's
    timeout ends them) held every parked place (``MAX_PARKED``), so another caller's review
    failed closed. Now a caller parks at most ``MAX_PARKED_PER_CALLER`` runs: past that only its
    own review fails."""
    from agentensemble.serve import _mcp_rounds

    monkeypatch.setattr(_mcp_rounds, "MAX_PARKED", 3)
    monkeypatch.setattr(_mcp_rounds, "MAX_PARKED_PER_CALLER", 2, raising=False)
    tokens = {"alice": "alice-token-long-enough", "bob": "bob-token-long-enough-too"}
    app = mcp_http_app(mcp_server({"writer": reviewed_factory()}), token=tokens)

    def connected(url: str, http: httpx2.AsyncClient) -> Client:
        return Client(streamable_http_client(url, http_client=http), elicitation_callback=approve)

    with hardened_serving(app, lifespan="on") as port, anyio.fail_after(WAIT * 3):
        url = f"http://127.0.0.1:{port}/mcp"
        alice_http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['alice']}"})
        bob_http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['bob']}"})
        async with (
            alice_http,
            bob_http,
            connected(url, alice_http) as alice,
            connected(url, bob_http) as bob,
        ):
            await park(alice)
            await park(alice)
            over = await alice.session.call_tool(
                "writer", {"topic": "AI"}, allow_input_required=True
            )
            other = await bob.call_tool("writer", {"topic": "AI"})
    assert isinstance(over, types.CallToolResult) and over.is_error  # fails closed: hers only
    assert other.content == [types.TextContent(text="the draft")]


async def test_one_caller_runs_a_bounded_number_of_calls_at_once() -> None:
    """Every call started a run (each spending the server's model key) with no bound per
    caller, where the A2A agent allows 8. Now a call past the caller's share (8 by default)
    is an error result before anything runs, and a finished run frees its place."""
    in_flight = 0
    release = asyncio.Event()

    async def answer(messages: Any, tools: Any) -> str:
        nonlocal in_flight
        in_flight += 1
        if in_flight >= 8:
            release.set()  # the eight the share lets in have all started
        await release.wait()
        return "done"

    def factory() -> Ensemble:
        agent = Agent(role="Solo", goal="Answer {question}", llm=FunctionChatModel(answer))
        return Ensemble(tasks=[Task(description="Answer {question}", agent=agent)])

    results: list[types.CallToolResult] = []
    async with Client(mcp_server({"solo": factory})) as client:

        async def call(question: str) -> None:
            results.append(await client.call_tool("solo", {"question": question}))

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as group:
                for n in range(12):
                    group.start_soon(call, f"question {n}")
            again = await client.call_tool("solo", {"question": "later"})  # places freed
    refused = [r for r in results if r.is_error]
    assert len(results) - len(refused) == 8 and len(refused) == 4
    assert "you already run 8 calls" in refused[0].content[0].text  # type: ignore[union-attr]
    assert not again.is_error
    assert in_flight == 9  # the refused calls never reached the model


def test_a_share_below_one_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="max_running_per_caller"):
        mcp_server({"writer": writer(ScriptedChatModel([]))}, max_running_per_caller=0)


async def test_listed_tools_show_no_registered_secret() -> None:
    """A registered secret in a task's description or expected output went out in the tool's
    description (and output schema) to every client, one registered after start too; an input
    named like a secret keeps its name."""
    early, late = "sk-tool-secret-early-123456", "sk-tool-secret-late-654321"
    register_secret(early)

    def telling() -> Ensemble:
        agent = Agent(role="Writer", goal="W", llm=ScriptedChatModel([]))
        task = Task(
            description=f"Write about {{topic}} for {{token}} with {early} and {late}",
            expected_output=f"a brief for {late}",
            agent=agent,
            output_type=Brief,
        )
        return Ensemble(tasks=[task])

    server = mcp_server({"writer": telling})
    register_secret(late)
    async with Client(server) as client:
        (tool,) = (await client.list_tools()).tools
    shown = tool.model_dump_json()
    assert "Write about {topic}" in shown
    assert early not in shown and late not in shown
    assert set(tool.input_schema["required"]) == {"topic", "token"}


async def test_another_callers_request_state_resumes_nothing() -> None:
    """A run's ``request_state`` reaching another caller (a log, a shared proxy): bob answered
    alice's question, approving her gated step, and the review named alice as the decider. A
    state is now its caller's, as an MCP session is: another caller's is unknown, and the
    run still waits for its own caller's answer."""
    tokens = {"alice": "alice-token-long-enough", "bob": "bob-token-long-enough-too"}
    app = mcp_http_app(mcp_server({"writer": reviewed_factory()}), token=tokens)
    approval = {"review": types.ElicitResult(action="accept", content={"decision": "approve"})}
    with hardened_serving(app, lifespan="on") as port, anyio.fail_after(WAIT * 3):
        url = f"http://127.0.0.1:{port}/mcp"
        alice_http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['alice']}"})
        bob_http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['bob']}"})
        async with (
            alice_http,
            bob_http,
            Client(
                streamable_http_client(url, http_client=alice_http), elicitation_callback=approve
            ) as alice,
            Client(
                streamable_http_client(url, http_client=bob_http), elicitation_callback=approve
            ) as bob,
        ):
            state = (await park(alice)).request_state
            stolen = await bob.session.call_tool(
                "writer", {"topic": "AI"}, request_state=state, input_responses=approval
            )
            own = await alice.session.call_tool(
                "writer", {"topic": "AI"}, request_state=state, input_responses=approval
            )
    assert stolen.is_error and "unknown or expired" in stolen.content[0].text  # type: ignore[union-attr]
    assert not own.is_error and own.content == [types.TextContent(text="the draft")]
