"""The openai lane (llm/_openai_client.py): which calls take it (one pure rule, as a table), the
call it builds for the ``openai`` package, and the clients' life (shared per loop and endpoint,
closed with their loop)."""

from __future__ import annotations

import pytest

from agentensemble import LLM
from agentensemble.llm import _model_table
from agentensemble.llm._openai_client import build_request, choose_lane, model_name

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


def test_build_request_passes_what_litellm_passes() -> None:
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
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": []},
    ]
    request = build_request(llm.request_kwargs(messages), environ={"OPENAI_ORG_ID": "org-1"})

    assert request.endpoint.base_url == "http://127.0.0.1:8000/v1/"
    assert request.endpoint.api_key == "sk-test-key-1"
    assert request.endpoint.organization == "org-1"
    assert request.body == {
        "model": "test-model",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": []},  # local servers need content
        ],
        "temperature": 0.2,
        "max_tokens": 50,
        "seed": 3,
        "top_k": 5,
    }
    assert request.options == {
        "headers": {"X-Team": "research"},
        "params": {"api-version": "1"},
        "timeout": 60.0,
    }
    assert "sk-test-key-1" not in repr(request)
    assert request.streaming().body["stream_options"] == {"include_usage": True}


def test_the_base_url_comes_from_the_environment_or_openai() -> None:
    kwargs = LLM("gpt-4o-mini", api_key="k" * 8).request_kwargs([])
    assert build_request(kwargs, environ={}).endpoint.base_url == "https://api.openai.com/v1"
    env = {"OPENAI_BASE_URL": "http://gw.local/v1", "OPENAI_API_KEY": "sk-env-0000"}
    request = build_request(LLM("gpt-4o-mini").request_kwargs([]), environ=env)
    assert request.endpoint.base_url == "http://gw.local/v1"
    assert request.endpoint.api_key == "sk-env-0000"
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


def test_clients_per_loop_and_endpoint_reused_and_dropped_with_closed_loops() -> None:
    import asyncio

    from agentensemble.llm import _openai_client
    from agentensemble.llm._openai_client import Endpoint

    here, there = Endpoint("http://127.0.0.1:1/v1", "k1"), Endpoint("http://127.0.0.1:2/v1", "k1")

    async def clients() -> tuple[object, object, object, asyncio.AbstractEventLoop]:
        first = await _openai_client.client_for(here)
        again = await _openai_client.client_for(here)
        other = await _openai_client.client_for(there)
        assert first is again and other is not first  # one client per endpoint, shared
        return first, _openai_client._loop_clients(), other, asyncio.get_running_loop()

    first, first_pool, _, first_loop = asyncio.run(clients())
    second, second_pool, _, second_loop = asyncio.run(clients())
    assert second is not first  # a new loop, new clients
    assert first_loop not in _openai_client._clients  # dropped when the second loop asked
    assert _openai_client._clients.get(second_loop) is second_pool
    assert first_pool.clients == {} and first.is_closed()  # type: ignore[attr-defined]


def test_many_calls_in_flight_share_one_client_and_one_tls_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing grows with the runs in flight: 50 concurrent calls on one endpoint, one client;
    every client, on any endpoint, with the process's one TLS context (none built per client)."""
    import asyncio
    import ssl

    from agentensemble.llm import _openai_client
    from agentensemble.testing import OpenAICompatibleServer

    async def first_client() -> None:  # imports the transport (aiohttp makes 2 contexts then)
        await _openai_client.client_for(_openai_client.Endpoint("http://127.0.0.1:1/v1", "k"))

    asyncio.run(first_client())
    built: list[object] = []
    original = ssl.create_default_context

    def counted(*args: object, **kwargs: object) -> ssl.SSLContext:
        built.append(args)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl, "create_default_context", counted)
    with OpenAICompatibleServer() as server:
        server.set_responder(lambda body: "hi")
        llm = LLM("openai/test-model", api_base=server.base_url, api_key="sk-test-many-1")

        async def many() -> tuple[list[str | None], int]:
            answers = await asyncio.gather(
                *(llm.complete([{"role": "user", "content": f"q{i}"}]) for i in range(50))
            )
            return [a.content for a in answers], len(_openai_client._loop_clients().clients)

        contents, clients = asyncio.run(many())

    assert contents == ["hi"] * 50 and clients == 1
    assert built == []  # the client was made with the shared context, not a new one


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
            from agentensemble.llm import _openai_client

            return answer.content, list(_openai_client._loop_clients().clients.values())

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            results = [asyncio.run(ask()) for _ in range(3)]
            gc.collect()

    assert [content for content, _ in results] == ["hi"] * 3
    assert all(client.is_closed() for _, clients in results for client in clients)  # type: ignore[attr-defined]
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, "aiohttp"),  # httpx-aiohttp comes with the package (openai[aiohttp])
        ({"DISABLE_AIOHTTP_TRANSPORT": "true"}, "httpx"),  # litellm's switch: respx sees httpx
        ({"DISABLE_AIOHTTP_TRANSPORT": "TRUE "}, "httpx"),
        ({"DISABLE_AIOHTTP_TRANSPORT": "false"}, "aiohttp"),
    ],
)
def test_the_transport_is_aiohttp_unless_switched_off(
    environ: dict[str, str], expected: str
) -> None:
    from agentensemble.llm._openai_client import transport

    assert transport(environ) == expected
