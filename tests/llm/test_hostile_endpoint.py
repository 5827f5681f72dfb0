"""A model endpoint the user does not control answers as it likes: its answer is hostile input.

``LLM("openai/<name>", api_base=...)`` reaches local servers, gateways and proxies. Whatever
they send (a body of hundreds of megabytes, a gzip bomb, an error page as large, a stream that
never stops growing, headers dripped a byte at a time, token counts that are negative or
astronomic, fields of the wrong type, tool-call arguments no parser takes), the call ends with a
bounded amount of memory and time, and either a ChatResponse of the right types or an
``LLMError`` saying what was wrong; and the run's later requests still go out.
"""

from __future__ import annotations

import functools
import json
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from _quiet_http import QuietHTTPServer

from agentensemble import LLM, RetryPolicy
from agentensemble.errors import LLMError
from agentensemble.limits import UsageLimits, UsageMeter
from agentensemble.llm import stream_assembly
from agentensemble.llm._messages import (
    BLOCK_PROVIDERS,
    MAX_TOKEN_COUNT,
    outgoing,
    read_response,
    read_usage,
)
from agentensemble.llm.cost import cost_usd
from agentensemble.llm.stream_assembly import StreamAssembler
from agentensemble.llm.streaming import use_sink
from agentensemble.llm.types import PROVIDER_KEY, ChatResponse
from agentensemble.outputs import TokenUsage

pytestmark = pytest.mark.anyio

ONCE = RetryPolicy(max_attempts=1)
MB = 1_000_000

Answer = Callable[[BaseHTTPRequestHandler], None]


@pytest.fixture
def endpoint() -> Iterator[Callable[[Answer], str]]:
    """A server on 127.0.0.1 that answers every POST with the function it is given."""
    servers: list[QuietHTTPServer] = []

    def serve(answer: Answer) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    answer(self)
                except OSError:
                    return  # the client hung up: what a bounded read does

            def log_message(self, *args: object) -> None:
                return

        server = QuietHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def llm(api_base: str, lane: str = "auto", timeout: float = 30.0) -> LLM:
    return LLM(
        "openai/test-model",
        api_base=api_base,
        api_key="sk-hostile-endpoint-0000",
        lane=lane,  # type: ignore[arg-type]
        timeout=timeout,
        retry_policy=ONCE,
    )


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


@functools.cache
def gzip_of_spaces(size: int) -> bytes:
    """``size`` bytes of spaces, gzip-compressed (a few hundred kB): a gzip bomb."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b" " * MB
    return b"".join(squeeze.compress(block) for _ in range(size // MB)) + squeeze.flush()


def plain_body(status: int, size: int) -> Answer:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(size))
        handler.end_headers()
        block = b" " * MB
        for _ in range(size // MB):
            handler.wfile.write(block)

    return answer


def gzip_body(status: int, size: int) -> Answer:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        body = gzip_of_spaces(size)
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Encoding", "gzip")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return answer


@pytest.mark.parametrize(
    "answer",
    [
        plain_body(200, 64 * MB),
        plain_body(500, 64 * MB),
        gzip_body(200, 200 * MB),
        gzip_body(400, 200 * MB),
    ],
    ids=["huge answer", "huge error body", "gzip bomb answer", "gzip bomb error body"],
)
@pytest.mark.parametrize("lane", ["auto", "litellm"])
async def test_a_huge_or_inflating_body_is_cut_while_it_arrives(
    endpoint: Callable[[Answer], str], answer: Answer, lane: str
) -> None:
    model = llm(endpoint(answer), lane)
    if lane == "litellm":  # imported before the measure: its import is not the body
        from agentensemble.llm._litellm import load_litellm

        load_litellm()
    tracemalloc.start()
    try:
        with pytest.raises(LLMError, match="answer is too large"):
            await model.complete(user("hi"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40 * MB  # the 8 MB bound and a chunk or two, never the whole body


def streamed(chunks: int, size: int) -> Answer:
    """A stream of ``chunks`` pieces of ``size`` different characters each, then the end."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()
        for number in range(chunks):
            piece = (f"{number:08d}" * (size // 8 + 1))[:size]  # no two pieces alike
            delta = {"choices": [{"index": 0, "delta": {"content": piece}}], "model": "m"}
            handler.wfile.write(b"data: " + json.dumps(delta).encode() + b"\n\n")
        end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "model": "m"}
        handler.wfile.write(b"data: " + json.dumps(end).encode() + b"\n\ndata: [DONE]\n\n")

    return answer


class Sink:
    def __init__(self) -> None:
        self.shown = 0

    def text(self, piece: str) -> None:
        self.shown += len(piece)

    def restarted(self, attempt: int) -> None:
        return


@pytest.mark.parametrize("lane", ["auto", "litellm"])
async def test_a_stream_growing_past_the_bound_is_cut_on_both_lanes(
    endpoint: Callable[[Answer], str], lane: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream_assembly, "MAX_STREAM_CHARS", 50_000)
    model = llm(endpoint(streamed(chunks=200, size=1_000)), lane)
    sink = Sink()
    with use_sink(sink), pytest.raises(LLMError, match="stream is too large"):
        await model.complete(user("hi"))
    assert sink.shown <= 50_000


@pytest.mark.parametrize("lane", ["auto", "litellm"])
async def test_a_stream_under_the_bound_is_whole(
    endpoint: Callable[[Answer], str], lane: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream_assembly, "MAX_STREAM_CHARS", 50_000)
    model = llm(endpoint(streamed(chunks=40, size=1_000)), lane)
    with use_sink(Sink()):
        answer = await model.complete(user("hi"))
    assert len(answer.content or "") == 40_000


def one_endless_line(handler: BaseHTTPRequestHandler) -> None:
    """A stream whose first line never ends: 40 MB of one event's data, then the close."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.end_headers()
    handler.wfile.write(b'data: {"choices": [{"delta": {"content": "')
    block = b"a" * MB
    for _ in range(40):
        handler.wfile.write(block)


@pytest.mark.parametrize("lane", ["auto", "litellm"])
async def test_a_stream_line_that_never_ends_is_cut_at_the_line_bound(
    endpoint: Callable[[Answer], str], lane: str
) -> None:
    # the openai package gathers a line by adding each piece to the bytes so far: its work
    # grows with the square of the line, on the event loop, until the idle deadline
    model = llm(endpoint(one_endless_line), lane)
    with use_sink(Sink()), pytest.raises(LLMError, match="a line of over 8000000 bytes"):
        await model.complete(user("hi"))


def dripped_headers(handler: BaseHTTPRequestHandler) -> None:
    """A status line and headers a byte every 0.1 s, for up to 20 s: never a whole head."""
    handler.wfile.write(b"HTTP/1.1 200 OK\r\n")
    ends = time.monotonic() + 20
    while time.monotonic() < ends:
        handler.wfile.write(b"X")
        handler.wfile.flush()
        time.sleep(0.1)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("lane", ["auto", "litellm"])
async def test_headers_dripped_a_byte_at_a_time_are_bounded_by_the_timeout_as_a_whole(
    endpoint: Callable[[Answer], str], lane: str, stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentensemble.llm import litellm_model

    monkeypatch.setattr(litellm_model, "_GUARD_SECONDS", 0.0)
    model = llm(endpoint(dripped_headers), lane, timeout=1.0)
    started = time.monotonic()
    with use_sink(Sink()) if stream else _nothing(), pytest.raises(LLMError):
        await model.complete(user("hi"))
    assert time.monotonic() - started < 12  # cut after ~1 s, not when the drip ends (20 s)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


# -- token counts: never negative, never astronomic, never a bare TypeError or OverflowError


@pytest.mark.parametrize(
    ("reported", "counted"),
    [
        (12, 12),
        (-1_000_000, 0),  # would subtract what the run's other calls used from its budget
        (10**30, MAX_TOKEN_COUNT),  # past any budget, but a number the price sum can take
        (10**400, MAX_TOKEN_COUNT),  # int * float raised OverflowError in cost_usd
        (12.0, 12),
        (float("inf"), 0),
        (float("nan"), 0),
        ("12", 0),
        (True, 0),
        (None, 0),
        ([12], 0),
    ],
)
def test_a_reported_token_count_is_read_within_bounds(reported: Any, counted: int) -> None:
    usage = read_usage(
        {"prompt_tokens": reported, "completion_tokens": reported, "total_tokens": reported}
    )
    assert (usage.prompt_tokens, usage.completion_tokens) == (counted, counted)
    assert usage.total_tokens == 2 * counted or usage.total_tokens == counted
    assert cost_usd(usage, "gpt-4o-mini") is not None  # priced, never raising


def test_negative_usage_from_one_endpoint_never_lowers_the_run_s_budget() -> None:
    meter = UsageMeter(UsageLimits(total_tokens=1_000, cost_usd=1.0))
    meter.add_usage(TokenUsage(prompt_tokens=900, completion_tokens=50, total_tokens=950), 0.9)
    hostile = read_usage(
        {"prompt_tokens": -(10**9), "completion_tokens": -5, "total_tokens": -(10**9)}
    )
    meter.add_usage(hostile, cost_usd(hostile, "gpt-4o-mini"))
    assert (meter.input_tokens, meter.total_tokens) == (900, 950)
    assert meter.cost_usd is not None and meter.cost_usd >= 0.9


# -- fields of the wrong type: a ChatResponse of the right types, or an LLMError


def _answer(message: Any, **top: Any) -> dict[str, Any]:
    return {"choices": [{"message": message, "finish_reason": "stop"}], **top}


def _call(**fields: Any) -> dict[str, Any]:
    return {"id": "call_1", "function": {"name": "f", "arguments": "{}"}, **fields}


@pytest.mark.parametrize(
    "answer",
    [
        _answer({"tool_calls": [_call(id=5)]}),
        _answer({"tool_calls": [_call(function={"name": {"x": 1}, "arguments": "{}"})]}),
        _answer({"tool_calls": [_call(function="oops")]}),
        _answer({"tool_calls": [_call(provider_specific_fields=[1, 2])]}),
        _answer({"tool_calls": "a string is not walked character by character" * 1000}),
        _answer({"tool_calls": {"a": 1}}),
        _answer({"content": [{"type": "text", "text": "hi"}]}),
        _answer("a message that is text"),
        _answer({"content": "x", "thinking_blocks": "not a list"}),
        _answer({"content": "x"}, model={"a": 1}),
        {"choices": [{"message": {"content": "x"}, "finish_reason": {"a": 1}}]},
    ],
)
def test_an_answer_of_the_wrong_types_is_read_into_the_right_ones(answer: Any) -> None:
    response = read_response(answer, provider="openai")
    assert isinstance(response, ChatResponse)
    assert isinstance(response.tool_calls, list) and len(response.tool_calls) <= 1
    for call in response.tool_calls:
        assert isinstance(call.id, str) and call.id
        assert isinstance(call.name, str) and isinstance(call.arguments, str)
    assert response.content is None or isinstance(response.content, str)
    assert response.model is None or isinstance(response.model, str)
    assert response.finish_reason is None or isinstance(response.finish_reason, str)


@pytest.mark.parametrize("choices", [{"a": 1}, "abc", [], None, 5])
def test_choices_that_are_not_a_list_are_no_answer(choices: Any) -> None:
    with pytest.raises(LLMError, match="no choices"):
        read_response({"choices": choices}, provider="openai")


@pytest.mark.parametrize(
    "delta",
    [
        {"tool_calls": "a string is not walked character by character"},
        {"tool_calls": {"a": 1}},
        {"tool_calls": [{"index": 0, "id": 5, "function": {"name": ["f"], "arguments": 1}}]},
        {"thinking_blocks": "not a list"},
        {"provider_specific_fields": "not a dict"},
    ],
)
def test_a_streamed_chunk_of_the_wrong_types_is_read_into_the_right_ones(delta: Any) -> None:
    assembler = StreamAssembler()
    assembler.add({"choices": {"not": "a list"}})
    assembler.add({"choices": [{"delta": delta, "finish_reason": "stop"}]})
    response = assembler.response()
    assert len(response.tool_calls) <= 1
    for call in response.tool_calls:
        assert isinstance(call.id, str) and isinstance(call.name, str)


def test_a_million_empty_tool_call_deltas_are_cut_like_a_million_characters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stream_assembly, "MAX_STREAM_CHARS", 64_000)
    assembler = StreamAssembler()
    with pytest.raises(ValueError, match="stream is too large"):
        for index in range(1_000_000):
            assembler.add({"choices": [{"delta": {"tool_calls": [{"index": index}]}}]})
    assert len(assembler._calls) <= 64_000 // stream_assembly.CALL_CHARS


# -- a 200 answer holding an error object (OpenRouter and other gateways)


def error_in_answer(code: Any, stream: bool) -> Answer:
    error = json.dumps({"error": {"message": "upstream provider overloaded", "code": code}})

    def answer(handler: BaseHTTPRequestHandler) -> None:
        body = (f"data: {error}\n\n" if stream else error).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream" if stream else "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return answer


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("code", "said", "attempts"),
    [
        (502, "BadGatewayError: upstream provider overloaded (gave up after 2 attempts)", 2),
        (429, "RateLimitError: upstream provider overloaded (gave up after 2 attempts)", 2),
        (400, "BadRequestError: upstream provider overloaded (not retryable, 1 attempt)", 1),
    ],
)
@pytest.mark.parametrize("lane", ["auto", "litellm"])
async def test_an_error_inside_a_200_answer_is_read_as_the_failure_it_names_on_both_lanes(
    endpoint: Callable[[Answer], str],
    lane: str,
    code: int,
    said: str,
    attempts: int,
    stream: bool,
) -> None:
    model = llm(endpoint(error_in_answer(code, stream)), lane).model_copy(
        update={"retry_policy": RetryPolicy(max_attempts=2, initial_backoff=0.001, jitter=0)}
    )
    with use_sink(Sink()) if stream else _nothing(), pytest.raises(LLMError) as caught:
        await model.complete(user("hi"))
    assert str(caught.value) == f"openai/test-model: {said}"
    assert caught.value.attempts == attempts


# -- a model's broken tool-call arguments, kept in the history, never break later requests

BROKEN_ARGUMENTS = {
    "cut short": '{"to": "ali',
    "nested 50,000 deep": "[" * 50_000 + "]" * 50_000,
    "a 5,000-digit number": '{"n": ' + "7" * 5_000 + "}",
    "a list": "[1, 2]",
    "empty": "",
}


def history_with_a_call(arguments: str) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call], PROVIDER_KEY: "anthropic"},
        {"role": "tool", "tool_call_id": "c1", "content": "Invalid arguments for 'f'"},
    ]


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "bedrock", "openai"])
@pytest.mark.parametrize("arguments", BROKEN_ARGUMENTS.values(), ids=BROKEN_ARGUMENTS.keys())
def test_broken_arguments_in_the_history_go_to_block_providers_as_an_empty_object(
    provider: str, arguments: str
) -> None:
    sent = outgoing(history_with_a_call(arguments), provider)[1]["tool_calls"][0]
    expected = arguments if provider not in BLOCK_PROVIDERS else "{}"
    assert sent["function"]["arguments"] == expected
    good = '{"to": "alice"}'
    assert outgoing(history_with_a_call(good), provider)[1]["tool_calls"][0] == {
        "id": "c1",
        "type": "function",
        "function": {"name": "f", "arguments": good},
    }


@pytest.mark.parametrize("arguments", BROKEN_ARGUMENTS.values(), ids=BROKEN_ARGUMENTS.keys())
async def test_a_run_on_anthropic_goes_on_after_the_model_wrote_broken_arguments(
    endpoint: Callable[[Answer], str], arguments: str
) -> None:
    received: list[dict[str, Any]] = []

    def answer(handler: BaseHTTPRequestHandler) -> None:
        received.append({"path": handler.path})
        handler.send_response(503)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    model = LLM(
        "anthropic/claude-3-5-sonnet-20241022",
        api_base=endpoint(answer).removesuffix("/v1"),
        api_key="sk-ant-hostile-0000",
        retry_policy=ONCE,
    )
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    with pytest.raises(LLMError, match="HTTP 503"):  # the request went out: litellm took it
        await model.complete(history_with_a_call(arguments), tools=tools)
    assert len(received) == 1


async def test_a_key_echoed_in_an_error_inside_a_200_answer_never_shows(
    endpoint: Callable[[Answer], str],
) -> None:
    key = "sk-hostile-endpoint-0000"

    def answer(handler: BaseHTTPRequestHandler) -> None:
        said = {"error": {"message": f"bad key {key}", "code": 401, "key": key}}
        body = json.dumps(said).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    with pytest.raises(LLMError) as caught:
        await llm(endpoint(answer)).complete(user("hi"))
    shown = [str(caught.value)]
    current: BaseException | None = caught.value
    while current is not None:
        shown += [str(current), repr(current), repr(vars(current))]
        current = current.__cause__ or current.__context__
    assert "AuthenticationError" in shown[0]
    assert not [text for text in shown if key in text]


@pytest.mark.parametrize(
    ("kind", "size", "read"),
    [
        ("image/png", 12 * MB, True),  # an image URL litellm downloads for an inline provider
        ("application/pdf", 30 * MB, True),  # over the answer bound, under the download one
        ("image/png", 80 * MB, False),  # past any attachment we send: cut as it arrives
        ("application/json", 12 * MB, False),  # an answer: the untrusted parser's bound
        ("text/html", 12 * MB, False),  # an error page
    ],
)
async def test_litellm_s_clients_still_download_a_file_an_attachment_may_be(
    kind: str, size: int, read: bool
) -> None:
    """litellm's async clients get the bound too; one of them downloads image URLs for
    providers that take images only inline, so a file (not JSON, text or a stream) is bounded at
    ``MAX_DOWNLOAD_BYTES``, above the 20 MiB attachment bound, and an answer at 8 MB."""
    import httpx

    from agentensemble.llm._body_bound import harden_client

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            block = b"\0" * MB
            try:
                for _ in range(size // MB):
                    self.wfile.write(block)
            except OSError:
                return  # the client stopped reading: what a bound does

        def log_message(self, *args: object) -> None:
            return

    server = QuietHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        async with harden_client(httpx.AsyncClient(timeout=30)) as client:
            url = f"http://127.0.0.1:{server.server_address[1]}/file"
            if read:
                assert len((await client.get(url)).content) == size
            else:
                from agentensemble.errors import UntrustedInputError

                with pytest.raises(UntrustedInputError, match="too large"):
                    await client.get(url)
    finally:
        server.shutdown()
        server.server_close()
