"""A2AAgent: a remote A2A agent as a tool; its answer is the tool result, its failure the
call's failure, and a hostile remote cannot redirect calls, flood the model or leak secrets."""

from __future__ import annotations

import json
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_helpers import FakeRemote, crew_file, model_env, serving

from agentensemble import Agent, Ensemble, Task
from agentensemble.logging import register_secret
from agentensemble.serve import A2AAgent
from agentensemble.testing import OpenAICompatibleServer, ScriptedChatModel, text, tool_call

pytestmark = pytest.mark.anyio


@pytest.fixture
def remote() -> Iterator[FakeRemote]:
    server = FakeRemote()
    yield server
    server.close()


async def test_the_remote_answer_is_the_tool_result(remote: FakeRemote) -> None:
    remote.answers("TASK_STATE_COMPLETED", "forty-two")
    result = await A2AAgent(remote.url).aexecute("what is the answer?")
    assert (result.is_success, result.output) == (True, "forty-two")
    sent = remote.posts[0]
    assert sent["method"] == "SendMessage"
    assert sent["params"]["message"]["parts"] == [{"text": "what is the answer?"}]


@pytest.mark.parametrize(
    ("state", "message", "expected"),
    [
        ("TASK_STATE_FAILED", "the database is down", "task failed: the database is down"),
        ("TASK_STATE_REJECTED", None, "task rejected"),
        ("TASK_STATE_CANCELED", None, "task canceled"),
        ("TASK_STATE_INPUT_REQUIRED", "which city?", "needs more input (input_required)"),
        ("TASK_STATE_WORKING", None, "stopped without an answer"),
    ],
)
async def test_a_remote_failure_is_the_calls_failure(
    remote: FakeRemote, state: str, message: str | None, expected: str
) -> None:
    remote.answers(state, "", message=message)
    result = await A2AAgent(remote.url).aexecute("go")
    assert not result.is_success
    assert expected in (result.error_message or "")


async def test_a_card_pointing_elsewhere_is_never_followed_without_the_allow_list(
    remote: FakeRemote,
) -> None:
    elsewhere = FakeRemote()
    try:
        elsewhere.answers("TASK_STATE_COMPLETED", "from elsewhere")
        remote.point_at(elsewhere.url)
        refused = await A2AAgent(remote.url).aexecute("go")
        allowed = await A2AAgent(remote.url, allowed_urls=[elsewhere.url]).aexecute("go")
    finally:
        elsewhere.close()
    assert not refused.is_success and "another origin" in (refused.error_message or "")
    assert "allowed_urls" in (refused.error_message or "")
    assert (allowed.is_success, allowed.output) == (True, "from elsewhere")
    assert len(elsewhere.posts) == 1  # only the allowed call reached it


async def test_hostile_remote_text_is_bounded_cleaned_and_redacted(remote: FakeRemote) -> None:
    register_secret("remote-leaked-secret-1")
    hostile = "\x1b[31mred\u202e evil remote-leaked-secret-1 sk-abcdefghijklmnop " + "x" * 50_000
    remote.answers("TASK_STATE_COMPLETED", hostile)
    result = await A2AAgent(remote.url, max_answer_chars=1_000).aexecute("go")
    output = result.output
    assert "\x1b" not in output and "\u202e" not in output
    assert "remote-leaked-secret-1" not in output and "sk-abcdefghijklmnop" not in output
    assert len(output) < 1_100 and output.endswith("exceeded 1000 chars]")


@pytest.mark.parametrize(
    ("card", "expected"),
    [
        (b"x" * (300 * 1024), "over 262144 bytes"),
        (b"not json", "unreadable agent card"),
    ],
)
async def test_a_bad_card_is_a_failure(remote: FakeRemote, card: bytes, expected: str) -> None:
    remote.raw_card = card
    result = await A2AAgent(remote.url).aexecute("go")
    assert not result.is_success and expected in (result.error_message or "")


def gzip_of(data: bytes, repeat: int) -> bytes:
    """``data`` ``repeat`` times, gzip-compressed (a few kB inflating to ``repeat`` times more)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join([*(packer.compress(data) for _ in range(repeat)), packer.flush()])


async def test_a_huge_or_bombed_answer_is_cut_while_it_arrives(remote: FakeRemote) -> None:
    """An answer inflating to 12 MB (from 12 kB of gzip) is refused at the body bound, as it
    arrives, counted decoded: the remote cannot make us hold what it sends."""
    task = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}
    task["artifacts"] = [{"artifactId": "a1", "parts": [{"text": "PAD"}]}]
    reply = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"task": task}}).encode()
    head, _, tail = reply.partition(b"PAD")
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [head, *(b"x" * 1_000_000 for _ in range(12)), tail]
    remote.raw_answer = b"".join(packer.compress(part) for part in parts) + packer.flush()
    remote.answer_headers = {"Content-Encoding": "gzip"}
    result = await A2AAgent(remote.url).aexecute("go")
    assert not result.is_success
    assert "the remote agent's answer" in (result.error_message or "")
    assert "too large" in (result.error_message or "")


async def test_a_stream_line_that_never_ends_is_cut(remote: FakeRemote) -> None:
    """A streaming remote sending one SSE line of 9 MB: cut at the line bound, never gathered."""
    remote.point_at(remote.url, streaming=True)
    remote.raw_answer = b"data: " + b"x" * 9_000_000
    remote.answer_headers = {"Content-Type": "text/event-stream"}
    result = await A2AAgent(remote.url).aexecute("go")
    assert not result.is_success
    assert "a line of over" in (result.error_message or "")


async def test_a_streamed_answer_is_the_tool_result(remote: FakeRemote) -> None:
    """The bound leaves an honest stream alone."""
    remote.point_at(remote.url, streaming=True)
    task = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}
    task["artifacts"] = [{"artifactId": "a1", "parts": [{"text": "streamed"}]}]
    event = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"task": task}})
    remote.raw_answer = f"data: {event}\n\n".encode()
    remote.answer_headers = {"Content-Type": "text/event-stream"}
    result = await A2AAgent(remote.url).aexecute("go")
    assert (result.is_success, result.output) == (True, "streamed")


async def test_a_bombed_card_is_refused_before_it_inflates(remote: FakeRemote) -> None:
    """A card of 200 kB of gzip inflating to 200 MB: refused at the card bound, and never more
    than a step of it inflated at once (httpx alone would inflate each 64 kB read whole)."""
    remote.raw_card = gzip_of(b" " * 1_000_000, 200)
    remote.card_headers = {"Content-Encoding": "gzip"}
    tracemalloc.start()
    try:
        result = await A2AAgent(remote.url).aexecute("go")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not result.is_success and "over 262144 bytes" in (result.error_message or "")
    assert peak < 16_000_000


async def test_an_unreachable_agent_is_a_failure() -> None:
    from serve_helpers import free_port

    result = await A2AAgent(f"http://127.0.0.1:{free_port()}/").aexecute("go")
    assert not result.is_success and "calling the remote agent failed" in (
        result.error_message or ""
    )


@pytest.mark.parametrize("url", ["ftp://x/", "not a url", "http:///nohost"])
def test_a_bad_url_is_refused_at_once(url: str) -> None:
    with pytest.raises(ValueError, match="http"):
        A2AAgent(url)


@pytest.mark.e2e
def test_an_ensemble_asks_a_served_crew_over_a2a(tmp_path: Path) -> None:
    """Our model calls the tool; the remote crew (serve-a2a, its own model on the local
    OpenAI-compatible server) answers; the answer goes back to our model; a remote failure
    reaches our model as an error it can work with."""
    with OpenAICompatibleServer() as remote_model:
        remote_model.push_text("Facts.")
        remote_model.push_text("The remote article.")
        for _ in range(6):
            remote_model.push_fault(500)
        env = model_env(remote_model.base_url)
        with serving(["serve-a2a", str(crew_file(tmp_path))], env) as base:
            agent = A2AAgent(base + "/", name="remote_writer")
            model = ScriptedChatModel(
                [
                    tool_call("remote_writer", {"input": "tides"}),
                    tool_call("remote_writer", {"input": "tides again"}),
                    text("done"),
                ]
            )
            local = Agent(role="Editor", goal="Edit", llm=model, tools=[agent])
            output = Ensemble(tasks=[Task(description="Get an article", agent=local)]).run()
    assert output.raw == "done"
    first, second = (str(request.messages[-1]) for request in model.requests[1:])
    assert "The remote article." in first
    assert "Error:" in second and "task failed" in second


async def test_a_hierarchical_manager_delegates_to_a_worker_that_asks_the_remote(
    remote: FakeRemote,
) -> None:
    """The documented way to make a remote A2A agent a delegation target: a worker whose tool
    it is. The remote's answer reaches the manager through the delegation."""
    from agentensemble import Workflow

    remote.answers("TASK_STATE_COMPLETED", "Tides follow the moon (remote).")
    manager = ScriptedChatModel(
        [
            tool_call(
                "delegate_task",
                {"agent_role": "Remote explainer", "instructions": "Explain tides"},
            ),
            text("Report: tides follow the moon."),
        ]
    )
    worker_model = ScriptedChatModel(
        [tool_call("explainer", {"input": "Explain tides"}), text("The remote says: moon.")]
    )
    worker = Agent(
        role="Remote explainer",
        goal="Ask the explainer agent and report its answer",
        llm=worker_model,
        tools=[A2AAgent(remote.url, name="explainer")],
    )
    ensemble = Ensemble(
        tasks=[Task(description="Write a report on tides", expected_output="A report")],
        agents=[worker],
        workflow=Workflow.HIERARCHICAL,
        manager_llm=manager,
    )
    output = await ensemble.arun()
    assert output.raw == "Report: tides follow the moon."
    assert "Tides follow the moon (remote)." in str(worker_model.requests[1].messages)
    assert "The remote says: moon." in str(manager.requests[1].messages)
