"""Which lane a call takes: one pure rule, as a table; and the request the openai lane builds."""

from __future__ import annotations

import json

import pytest

from agentensemble import LLM
from agentensemble.llm import _model_table
from agentensemble.llm._lanes import choose_lane
from agentensemble.llm._openai_lane import build_request, model_name

LANES = [
    # model, extra setting names, setting, environment, lane
    ("openai/gpt-4o-mini", [], "auto", {}, "openai"),
    ("openai/my-local-model", ["seed", "top_p", "extra_headers"], "auto", {}, "openai"),
    ("gpt-4o-mini", [], "auto", {}, "openai"),
    ("chatgpt-4o-latest", [], "auto", {}, "openai"),
    ("openai/gpt-4o", [], "litellm", {}, "litellm"),
    ("openai/gpt-4o", [], "auto", {"AGENTENSEMBLE_LLM_LANE": "LiteLLM"}, "litellm"),
    ("openai/gpt-4o", [], "auto", {"AGENTENSEMBLE_LLM_LANE": "anything else"}, "openai"),
    ("openai/gpt-4o", ["mock_response"], "auto", {}, "litellm"),  # litellm-only setting
    ("openai/gpt-4o", ["drop_params"], "auto", {}, "litellm"),
    ("openai/o3-mini", [], "auto", {}, "litellm"),  # litellm rewrites reasoning requests
    ("o1", [], "auto", {}, "litellm"),
    ("openai/gpt-5-mini", [], "auto", {}, "litellm"),
    ("openai/gpt-3.5-turbo-instruct", [], "auto", {}, "litellm"),  # text completions
    ("anthropic/claude-3-5-sonnet", [], "auto", {}, "litellm"),
    ("azure/deployment", [], "auto", {}, "litellm"),
    ("ollama/llama3.1", [], "auto", {}, "litellm"),
    ("hosted_vllm/x", [], "auto", {}, "litellm"),
]


@pytest.mark.parametrize(("model", "extra", "setting", "env", "lane"), LANES)
def test_choose_lane(
    model: str, extra: list[str], setting: str, env: dict[str, str], lane: str
) -> None:
    assert choose_lane(model, extra, setting, env) == lane  # type: ignore[arg-type]


def test_llm_reports_its_lane(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTENSEMBLE_LLM_LANE", raising=False)
    assert LLM("openai/gpt-4o-mini").effective_lane == "openai"
    assert LLM("openai/gpt-4o-mini", lane="litellm").effective_lane == "litellm"
    assert LLM("openai/gpt-4o-mini", mock_response="hi").effective_lane == "litellm"
    monkeypatch.setenv("AGENTENSEMBLE_LLM_LANE", "litellm")
    assert LLM("openai/gpt-4o-mini").effective_lane == "litellm"
    with pytest.raises(ValueError):
        LLM("openai/gpt-4o-mini", lane="fast")  # type: ignore[arg-type]


def test_build_request_sends_what_litellm_sends() -> None:
    llm = LLM(
        "openai/test-model",
        api_base="http://127.0.0.1:8000/v1/",
        api_key="sk-test-key-1",
        temperature=0.2,
        max_tokens=50,
        seed=3,
        extra_headers={"X-Team": "research"},
        extra_body={"top_k": 5},
        extra_query={"api-version": "1"},
    )
    messages = [
        {"role": "user", "content": "hi \ud800"},
        {"role": "assistant", "content": None, "tool_calls": []},
    ]
    request = build_request(llm.request_kwargs(messages), environ={"OPENAI_ORG_ID": "org-1"})

    assert request.url == "http://127.0.0.1:8000/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer sk-test-key-1"
    assert request.headers["OpenAI-Organization"] == "org-1"
    assert request.headers["X-Team"] == "research"
    assert request.params == {"api-version": "1"}
    assert request.timeout == 60.0
    assert json.loads(request.body) == {
        "model": "test-model",
        "messages": [
            {"role": "user", "content": "hi \ufffd"},
            {"role": "assistant", "content": "", "tool_calls": []},  # local servers need content
        ],
        "temperature": 0.2,
        "max_tokens": 50,
        "seed": 3,
        "top_k": 5,
    }
    assert "sk-test-key-1" not in repr(request)


def test_the_base_url_comes_from_the_environment_or_openai() -> None:
    kwargs = LLM("gpt-4o-mini", api_key="k" * 8).request_kwargs([])
    assert build_request(kwargs, environ={}).url == "https://api.openai.com/v1/chat/completions"
    env = {"OPENAI_BASE_URL": "http://gw.local/v1", "OPENAI_API_KEY": "sk-env-0000"}
    request = build_request(LLM("gpt-4o-mini").request_kwargs([]), environ=env)
    assert request.url == "http://gw.local/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer sk-env-0000"
    assert model_name("openai/gpt-4o") == "gpt-4o" and model_name("gpt-4o") == "gpt-4o"


@pytest.mark.parametrize(
    "model",
    [
        "openai/gpt-4o-mini",
        "openai/gpt-4o",
        "gpt-4o-2024-08-06",
        "openai/gpt-4.1",
        "openai/gpt-4",
        "openai/gpt-3.5-turbo",
        "chatgpt-4o-latest",
        "openai/test-model",
    ],
)
def test_response_schema_support_from_the_table_matches_litellm(model: str) -> None:
    from agentensemble.llm import cost
    from agentensemble.llm._litellm import load_litellm

    bundled = cost._read_bundled()  # the JSON file, as the openai lane reads it without litellm
    entry = bundled.get(model.split("/", 1)[-1]) or bundled.get(model) or {}
    from_file = entry.get("supports_response_schema") is True
    assert from_file is bool(load_litellm().supports_response_schema(model=model))
    assert _model_table.table_supports_response_schema(model) is from_file


def test_clients_per_loop_reused_and_dropped_with_closed_loops() -> None:
    import asyncio

    from agentensemble.llm import _openai_lane

    async def clients() -> tuple[object, object, asyncio.AbstractEventLoop]:
        return (
            _openai_lane._loop_clients(),
            _openai_lane._loop_clients(),
            asyncio.get_running_loop(),
        )

    first, again, first_loop = asyncio.run(clients())
    assert first is again  # one set of clients per loop
    second, _, second_loop = asyncio.run(clients())
    assert second is not first  # a new loop, new clients
    assert first_loop not in _openai_lane._clients  # dropped when the second loop asked
    assert _openai_lane._clients.get(second_loop) is second


def test_sequential_calls_share_a_client_and_concurrent_ones_spread() -> None:
    import asyncio

    from agentensemble.llm._openai_lane import _LoopClients

    async def scenario() -> None:
        pool = _LoopClients()
        for _ in range(3):  # one call at a time: always the first client (its connection)
            pool.release(index := pool.acquire())
            assert index == 0
        held = [pool.acquire() for _ in range(2 * pool.PER_CLIENT + 1)]
        assert held.count(0) == pool.PER_CLIENT and len(pool.clients) == 3
        for index in held:
            pool.release(index)
        assert pool.acquire() == 0 and pool.in_flight == [1, 0, 0]
        for client in pool.clients:
            await client.aclose()

    asyncio.run(scenario())


def test_a_loops_clients_are_closed_when_asyncio_run_ends_it() -> None:
    """``asyncio.run`` per call used to leave each loop's connections open (unclosed socket
    warnings at exit); they now close while the loop shuts down."""
    import asyncio
    import gc
    import warnings

    from agentensemble.testing import OpenAICompatibleServer

    with OpenAICompatibleServer() as server:
        server.set_responder(lambda body: "hi")
        llm = LLM("openai/test-model", api_base=server.base_url, api_key="sk-test-close-1")

        async def ask() -> tuple[str | None, list[object]]:
            answer = await llm.complete([{"role": "user", "content": "hello"}])
            from agentensemble.llm import _openai_lane

            return answer.content, list(_openai_lane._loop_clients().clients)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            results = [asyncio.run(ask()) for _ in range(3)]
            gc.collect()

    assert [content for content, _ in results] == ["hi"] * 3
    assert all(client.is_closed for _, clients in results for client in clients)  # type: ignore[attr-defined]
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
