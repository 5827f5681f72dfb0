"""The test server itself, spoken to with plain httpx (no litellm): what later suites rely on."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
from openai_server import Fault, OpenAIServer, TextReply

CHAT = {"model": "m", "messages": [{"role": "user", "content": "one two three"}]}


def post(
    server: OpenAIServer,
    body: object = CHAT,
    path: str = "/v1/chat/completions",
    timeout: float = 5.0,
) -> httpx.Response:
    return httpx.post(server.url + path, json=body, timeout=timeout)


def test_text_answer_and_recording(openai_server: OpenAIServer) -> None:
    openai_server.push_text("hello there")
    response = post(openai_server)
    assert response.status_code == 200
    data = response.json()
    assert data["object"] == "chat.completion"
    assert data["choices"][0]["message"] == {"role": "assistant", "content": "hello there"}
    assert data["choices"][0]["finish_reason"] == "stop"
    assert data["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    assert openai_server.requests == [CHAT]
    assert openai_server.base_url == f"http://127.0.0.1:{openai_server.port}/v1"


def test_tool_calls_get_ids_and_keep_argument_text(openai_server: OpenAIServer) -> None:
    openai_server.push_tool_calls([("a", '{"x":1}'), ("b", {"y": [2]})])
    message = post(openai_server, path="/chat/completions").json()["choices"][0]["message"]
    calls = message["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["a", "b"]
    assert calls[0]["function"]["arguments"] == '{"x":1}'
    assert json.loads(calls[1]["function"]["arguments"]) == {"y": [2]}
    assert len({c["id"] for c in calls}) == 2


def test_status_faults_carry_headers_and_error_body(openai_server: OpenAIServer) -> None:
    openai_server.push_fault(429, retry_after=2)
    openai_server.push_fault(503, headers={"X-Test": "1"})
    first, second = post(openai_server), post(openai_server)
    assert first.status_code == 429 and first.headers["retry-after"] == "2"
    assert first.json()["error"]["type"] == "rate_limit_error"
    assert second.status_code == 503 and second.headers["x-test"] == "1"


def test_drop_and_truncated_faults_break_the_exchange(openai_server: OpenAIServer) -> None:
    openai_server.push_fault(kind="drop")
    openai_server.push_fault(kind="truncated")
    with pytest.raises(httpx.RemoteProtocolError):
        post(openai_server)
    with pytest.raises(httpx.RemoteProtocolError):
        post(openai_server)
    openai_server.push_fault(kind="non_json")
    response = post(openai_server)
    assert response.status_code == 200
    with pytest.raises(ValueError):
        response.json()


def test_slow_answer_and_hang(openai_server: OpenAIServer) -> None:
    openai_server.push_text("late", delay=0.2)
    start = time.monotonic()
    assert post(openai_server).json()["choices"][0]["message"]["content"] == "late"
    assert time.monotonic() - start >= 0.19
    openai_server.push_fault(kind="hang", delay=5)
    with pytest.raises(httpx.ReadTimeout):
        post(openai_server, timeout=0.3)


def test_responder_is_used_when_the_script_is_empty(openai_server: OpenAIServer) -> None:
    openai_server.push_text("scripted first")
    openai_server.set_responder(lambda req: f"echo: {req['messages'][-1]['content']}")
    first = post(openai_server).json()["choices"][0]["message"]["content"]
    second = post(openai_server).json()["choices"][0]["message"]["content"]
    assert (first, second) == ("scripted first", "echo: one two three")
    openai_server.set_responder(lambda req: Fault.http(500))
    assert post(openai_server).status_code == 500


def test_a_failing_responder_is_reported_not_retried() -> None:
    with OpenAIServer() as server:
        server.set_responder(lambda req: 1 / 0)  # type: ignore[arg-type, return-value]
        response = post(server)
        assert response.status_code == 400
        assert "ZeroDivisionError" in response.json()["error"]["message"]
        assert server.errors and "ZeroDivisionError" in server.errors[0]


def test_exhausted_script_is_a_clear_400(openai_server: OpenAIServer) -> None:
    response = post(openai_server)
    assert response.status_code == 400
    assert "script exhausted" in response.json()["error"]["message"]
    assert openai_server.log[0].outcome == "error"


def test_chaos_is_seeded_and_leaves_the_script_alone() -> None:
    def outcomes(seed: int) -> list[str]:
        with OpenAIServer(fault_rate=0.5, seed=seed, fault_kinds=[Fault.http(503)]) as server:
            server.set_responder(lambda req: TextReply("ok"))
            for _ in range(12):
                post(server)
            return [entry.outcome for entry in server.log]

    first, again = outcomes(3), outcomes(3)
    assert first == again
    assert "chaos:status:503" in first and "text" in first


def test_wait_for_requests_and_concurrent_clients(openai_server: OpenAIServer) -> None:
    # Six handlers must be inside the responder at once to pass the barrier: served one by one,
    # the first would wait alone, break it, and answer 400.
    barrier = threading.Barrier(6, timeout=30)

    def together(req: dict[str, object]) -> TextReply:
        barrier.wait()
        return TextReply("ok")

    openai_server.set_responder(together)
    statuses: list[int] = []
    threads = [
        threading.Thread(target=lambda: statuses.append(post(openai_server).status_code))
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    assert len(openai_server.wait_for_requests(6, timeout=30)) == 6
    for thread in threads:
        thread.join(30)
    assert statuses == [200] * 6
    assert openai_server.errors == []
    with pytest.raises(TimeoutError):
        openai_server.wait_for_requests(7, timeout=0.05)


def test_close_is_prompt_with_a_hanging_request() -> None:
    server = OpenAIServer().start()
    server.push_fault(kind="hang", delay=30)
    outcome: list[BaseException] = []

    def client() -> None:
        try:
            post(server)
        except httpx.HTTPError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=client)
    worker.start()
    server.wait_for_requests(1, timeout=5)
    start = time.monotonic()
    server.close()
    worker.join(5)
    assert time.monotonic() - start < 3
    assert not worker.is_alive()
    assert len(outcome) == 1  # the client saw the connection end, not an answer
