"""agentensemble.testing.OpenAICompatibleServer: a scripted OpenAI-compatible server for users'
tests over real HTTP (the same server our own end-to-end suites use)."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from agentensemble import Agent, Ensemble, Task
from agentensemble.llm import LLM
from agentensemble.testing import (
    Fault,
    OpenAICompatibleServer,
    TextReply,
    text,
    tool_call,
)

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def post(server: OpenAICompatibleServer, body: object = CHAT) -> httpx.Response:
    return httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=5.0)


def test_built_with_no_arguments_it_answers_what_is_pushed_later() -> None:
    with OpenAICompatibleServer() as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        assert server.base_url.endswith("/v1")
        empty = post(server)
        server.push_text("later")
        answered = post(server)
    assert empty.status_code == 400
    assert "script exhausted" in empty.json()["error"]["message"]
    assert answered.json()["choices"][0]["message"]["content"] == "later"


def test_scripted_like_a_scripted_chat_model() -> None:
    script = ["plain text", text("a ChatResponse"), tool_call("add", {"a": 1}), Fault.http(503)]
    with OpenAICompatibleServer(script) as server:
        replies = [post(server) for _ in script]
        server.add(TextReply("added"))
        added = post(server).json()["choices"][0]["message"]["content"]
    first, second, third, fourth = replies
    assert first.json()["choices"][0]["message"]["content"] == "plain text"
    assert second.json()["choices"][0]["message"]["content"] == "a ChatResponse"
    call = third.json()["choices"][0]["message"]["tool_calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == ("add", {"a": 1})
    assert fourth.status_code == 503
    assert added == "added"
    assert [entry.outcome for entry in server.log] == [
        "text",
        "text",
        "tool_calls",
        "fault:status:503",
        "text",
    ]


def test_a_script_entry_of_another_type_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="got int"):
        OpenAICompatibleServer([42])  # type: ignore[list-item]


def test_listens_on_loopback_only() -> None:
    with OpenAICompatibleServer() as server:
        assert server._httpd is not None
        assert server._httpd.server_address[0] == "127.0.0.1"


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"Content-Length: nope\r\n", 400),
        (b"Content-Length: -5\r\n", 400),
        (b"Content-Length: 999999999999\r\n", 413),
    ],
)
def test_hostile_request_heads_get_a_clear_error(head: bytes, status: int) -> None:
    with (
        OpenAICompatibleServer(["never served"]) as server,
        socket.create_connection(("127.0.0.1", server.port), timeout=5.0) as conn,
    ):
        conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n")
        answer = conn.recv(4096).decode("latin-1")
        assert answer.startswith(f"HTTP/1.1 {status}")
        assert server.pending == 1


@pytest.mark.parametrize("body", [[1, 2], "text", 3])
def test_a_json_body_that_is_no_object_is_a_400(body: object) -> None:
    with OpenAICompatibleServer(["never served"]) as server:
        response = post(server, body)
        assert response.status_code == 400
        assert "not a JSON object" in response.json()["error"]["message"]
        assert server.errors == []


def test_an_ensemble_runs_against_it_over_http() -> None:
    with OpenAICompatibleServer(["Paris."]) as server:
        llm = LLM("openai/test-model", api_base=server.base_url, api_key="sk-test")
        agent = Agent(role="Geographer", goal="Answer", llm=llm)
        output = Ensemble(tasks=[Task(description="Capital of France?", agent=agent)]).run()
    assert output.raw == "Paris."
    assert "Capital of France?" in json.dumps(server.requests[0]["messages"])


def test_openai_base_url_points_a_model_string_at_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with OpenAICompatibleServer(["From the environment."]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        agent = Agent(role="Writer", goal="Write", llm="openai/test-model")
        output = Ensemble(tasks=[Task(description="Say something", agent=agent)]).run()
    assert output.raw == "From the environment."
    assert len(server.requests) == 1


@pytest.mark.parametrize("wrong", [{"content": "hi"}, None, 42], ids=["dict", "None", "int"])
def test_a_responder_returning_the_wrong_type_tells_the_test_author(wrong: object) -> None:
    # the client gets one 400 naming the types a responder may return, not a dropped connection
    with OpenAICompatibleServer() as server:
        server.set_responder(lambda request: wrong)  # type: ignore[arg-type, return-value]
        response = post(server)
        assert len(server.requests) == 1
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert f"the responder returned {type(wrong).__name__}" in message
    assert "a str (a text answer), a ChatResponse" in message


def test_a_responder_may_return_what_a_script_holds() -> None:
    replies = iter([text("from text()"), tool_call("add", {"a": 1}), TextReply("a TextReply")])
    with OpenAICompatibleServer() as server:
        server.set_responder(lambda request: next(replies))
        answers = [post(server).json()["choices"][0]["message"] for _ in range(3)]
    assert answers[0]["content"] == "from text()"
    assert answers[1]["tool_calls"][0]["function"]["name"] == "add"
    assert answers[2]["content"] == "a TextReply"


def test_through_an_llm_the_wrong_type_fails_at_once_with_the_reason() -> None:
    from agentensemble.errors import LLMError

    with OpenAICompatibleServer() as server:
        server.set_responder(lambda request: {"role": "assistant"})  # type: ignore[arg-type, return-value]
        llm = LLM("openai/test-model", api_base=server.base_url, api_key="sk-test")
        agent = Agent(role="R", goal="G", llm=llm)
        with pytest.raises(Exception) as caught:
            Ensemble(tasks=[Task(description="d", expected_output="e", agent=agent)]).run()
        assert len(server.requests) == 1  # not retried into the same mistake
    chain = [caught.value, caught.value.__cause__]
    assert any(isinstance(error, LLMError) for error in chain)
    assert "the responder returned dict" in str(chain)
