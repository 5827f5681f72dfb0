"""The two model lanes are indistinguishable: the same calls, the same answers, the same errors.

Each scenario runs twice against a fresh local server, once on the openai lane (the ``openai``
package on its aiohttp transport, litellm not involved) and once forced through litellm, and
everything a user can see is compared: the ``ChatResponse`` (text, tool calls, usage, finish
reason, model), the request bodies the server received, and for failures the ``LLMError`` text,
status and attempt count.
The chaos, secrets and HTTP suites also run on both lanes (the ``model_lane`` fixture).
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from openai_server import Fault, OpenAIServer, TextReply, ToolCallsReply

from agentensemble import LLM, RetryPolicy
from agentensemble.errors import LLMError
from agentensemble.llm import ResponseFormat

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

KEY = "sk-lanes-4f1e8a2b9c3d7e6f"
POLICY = RetryPolicy(max_attempts=2, initial_backoff=0.001, max_backoff=0.002, jitter=0)
ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
    },
}
HISTORY = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": [{"type": "text", "text": "What is 2 + 40?"}]},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "42 \udcff"},
]


@dataclass(frozen=True)
class Scenario:
    script: tuple[Any, ...]
    settings: dict[str, Any] = field(default_factory=dict)
    tools: bool = False
    response_format: bool = False


def twice(fault: Fault) -> tuple[Fault, Fault]:
    return (fault, fault)


SCENARIOS = {
    "text with usage": Scenario((TextReply("Paris.", usage=(9, 7)),)),
    "tool calls": Scenario(
        (ToolCallsReply((("add", '{"a": 1}'), ("add", '{"a": 2}')), content="Adding."),),
        tools=True,
    ),
    "a history with tool results and parts": Scenario((TextReply("42."),), tools=True),
    "finish reason length": Scenario((TextReply("Cut", finish_reason="length"),)),
    "finish reason eos": Scenario((TextReply("Done", finish_reason="eos"),)),
    "settings and response_format": Scenario(
        (TextReply('{"x": 1}'),),
        settings={"temperature": 0.3, "max_tokens": 20, "seed": 7, "top_p": 0.5},
        response_format=True,
    ),
    "429 then success": Scenario((Fault.http(429, retry_after=0), TextReply("ok"))),
    "401 echoing the key": Scenario(
        (Fault.http(401, body='{"error": {"message": "Incorrect API key: ' + KEY + '"}}'),)
    ),
    "400 context window": Scenario(
        (
            Fault.http(
                400,
                body='{"error": {"message": "maximum context length is 8192 tokens", '
                '"code": "context_length_exceeded"}}',
            ),
        )
    ),
    "404": Scenario((Fault.http(404),)),
    "500 twice": Scenario(twice(Fault.http(500))),
    "502 with an HTML body": Scenario(twice(Fault.http(502, body="<html>bad gateway</html>"))),
    "503 without a body": Scenario(twice(Fault.http(503, body=""))),
    "dropped connection": Scenario(twice(Fault(kind="drop"))),
    "truncated body": Scenario(twice(Fault(kind="truncated"))),
    "non-JSON body": Scenario(twice(Fault(kind="non_json"))),
    # a 2 s client timeout against a 30 s hang: a busy machine cannot turn one into the other
    "too slow": Scenario(twice(Fault(kind="hang", delay=30.0)), settings={"timeout": 2.0}),
}


async def outcome(lane: str, scenario: Scenario) -> tuple[Any, list[Any]]:
    """What a user sees from one call on ``lane``, and the request bodies the server got."""
    with OpenAIServer() as server:
        server.push(*scenario.script)
        settings = {"timeout": 10.0, **scenario.settings}
        llm = LLM(
            "openai/test-model",
            api_base=server.base_url,
            api_key=KEY,
            retry_policy=POLICY,
            lane="litellm" if lane == "litellm" else "auto",
            **settings,
        )
        assert llm.effective_lane == lane
        messages = HISTORY if scenario.tools else HISTORY[:2]
        schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
        try:
            seen: Any = await llm.complete(
                messages,
                tools=[ADD] if scenario.tools else None,
                response_format=ResponseFormat("answer", schema)
                if scenario.response_format
                else None,
            )
        except LLMError as error:
            text = str(error).replace(f":{server.port}", ":PORT")  # each lane has its server
            # the transport's own words for a broken connection (aiohttp's or httpx's) differ
            text = re.sub(
                r"(broke before a complete response) \(.*?\) \(api_base",
                r"\1 (...) (api_base",
                text,
            )
            seen = ("LLMError", text, error.status_code, error.attempts)
        return seen, [entry.body for entry in server.log]


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_both_lanes_answer_and_fail_alike(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTENSEMBLE_LLM_LANE", raising=False)
    scenario = SCENARIOS[name]

    fast, fast_requests = await outcome("openai", scenario)
    slow, slow_requests = await outcome("litellm", scenario)

    assert fast == slow
    assert fast_requests == slow_requests
    assert KEY[3:] not in str(fast)


async def test_a_refused_connection_reads_the_same_on_both_lanes() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
    try:
        base = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        errors = []
        for lane in ("auto", "litellm"):
            llm = LLM("openai/m", api_base=base, api_key=KEY, retry_policy=POLICY, lane=lane)
            with pytest.raises(LLMError) as caught:
                await llm.complete([{"role": "user", "content": "hi"}])
            errors.append((str(caught.value), caught.value.status_code, caught.value.attempts))
    finally:
        sock.close()
    assert errors[0] == errors[1]
    assert "connection refused" in errors[0][0] and errors[0][1] is None


def test_the_openai_lane_never_imports_litellm(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push_text("hello from a fresh process")
    script = textwrap.dedent(
        f"""
        import sys
        from agentensemble import LLM, Agent, Ensemble, Task
        llm = LLM("openai/test-model", api_base={openai_server.base_url!r}, api_key="sk-x")
        agent = Agent(role="A", goal="G", llm=llm)
        print(Ensemble(tasks=[Task(description="Say hello", agent=agent)]).run().raw)
        print(sorted(m for m in ("litellm", "openai") if m in sys.modules))
        print(sorted(m for m in ("aiohttp", "httpx_aiohttp") if m in sys.modules))
        """
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    # the openai package on its aiohttp transport (installed with the package), never litellm
    assert done.stdout.splitlines() == [
        "hello from a fresh process",
        "['openai']",
        "['aiohttp', 'httpx_aiohttp']",
    ]


@pytest.mark.parametrize("lane", ["openai", "litellm"])
def test_a_model_name_alone_reaches_the_server_named_by_the_environment(
    lane: str, openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentensemble import Ensemble, Task

    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    if lane == "litellm":
        monkeypatch.setenv("AGENTENSEMBLE_LLM_LANE", "litellm")
    else:
        monkeypatch.delenv("AGENTENSEMBLE_LLM_LANE", raising=False)
    openai_server.push_text("from the environment")

    result = Ensemble(tasks=[Task(description="Say it")], llm="openai/test-model").run()

    assert result.raw == "from the environment"
    assert openai_server.log[0].headers["authorization"] == f"Bearer {KEY}"


class Pieces:
    """A streaming sink that records what it is given."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def text(self, piece: str) -> None:
        self.seen.append(piece)

    def restarted(self, attempt: int) -> None:
        self.seen.append(f"<restart {attempt}>")


@pytest.mark.parametrize(
    "script",
    [
        (TextReply("Paris is the capital", usage=(9, 4)),),
        (ToolCallsReply((("add", '{"a": 1}'), ("add", '{"a": 2}')), content="Adding."),),
        (Fault(kind="stream_break", body="Paris is"), TextReply("Paris is the capital")),
        (Fault.http(429, retry_after=0), TextReply("ok", finish_reason="eos")),
    ],
    ids=["text", "tool calls", "broken stream", "429 then eos"],
)
async def test_both_lanes_stream_alike(script: tuple[Any, ...]) -> None:
    from agentensemble.llm.streaming import use_sink

    seen = {}
    for lane in ("openai", "litellm"):
        with OpenAIServer() as server:
            server.push(*script)
            llm = LLM(
                "openai/test-model",
                api_base=server.base_url,
                api_key=KEY,
                retry_policy=POLICY,
                lane="litellm" if lane == "litellm" else "auto",
            )
            sink = Pieces()
            with use_sink(sink):
                response = await llm.complete(HISTORY, tools=[ADD])
            seen[lane] = (response, sink.seen, [entry.body for entry in server.log])

    assert seen["openai"] == seen["litellm"]
    assert all(body["stream"] is True for body in seen["openai"][2])
