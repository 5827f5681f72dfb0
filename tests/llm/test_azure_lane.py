"""Azure OpenAI on the openai lane: the request litellm would send, the same answers and errors.

respx sees both lanes (litellm is switched to its httpx transport), so each scenario runs on
both and the requests and outcomes are compared.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

from agentensemble import LLM, RetryPolicy
from agentensemble.errors import LLMError
from agentensemble.llm._lanes import choose_lane
from agentensemble.llm._openai_lane import AZURE_DEFAULT_API_VERSION

BASE = "https://example-resource.openai.azure.com"
KEY = "az-key-5e1c9a7b3d2f"
FAST = RetryPolicy(max_attempts=2, initial_backoff=0.001, max_backoff=0.002, jitter=0)
ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-2024-08-06",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
}


@pytest.fixture
def azure() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        yield router


@pytest.mark.parametrize(
    ("env", "has_key", "api_base", "lane"),
    [
        ({}, True, BASE, "openai"),
        ({"AZURE_API_KEY": KEY, "AZURE_API_BASE": BASE}, False, None, "openai"),
        ({"AZURE_OPENAI_API_KEY": KEY}, False, BASE, "openai"),
        ({}, False, BASE, "litellm"),  # no key: Entra ID and friends are litellm's business
        ({"AZURE_API_KEY": KEY}, False, None, "litellm"),  # no endpoint known
        ({"AZURE_API_KEY": KEY, "AGENTENSEMBLE_LLM_LANE": "litellm"}, True, BASE, "litellm"),
    ],
)
def test_azure_takes_the_openai_lane_with_a_key_and_an_endpoint(
    env: dict[str, str], has_key: bool, api_base: str | None, lane: str
) -> None:
    assert choose_lane("azure/dep", (), "auto", env, has_key=has_key, api_base=api_base) == lane
    assert choose_lane("azure/dep", ["azure_ad_token"], "auto", env, has_key=True) == "litellm"


def test_the_default_api_version_is_litellms() -> None:
    from agentensemble.llm._litellm import load_litellm

    assert load_litellm().AZURE_DEFAULT_API_VERSION == AZURE_DEFAULT_API_VERSION


async def one_call(lane: str, **settings: Any) -> Any:
    llm = LLM(
        "azure/my-deployment",
        api_base=BASE,
        api_key=KEY,
        retry_policy=FAST,
        max_tokens=5,
        lane="litellm" if lane == "litellm" else "auto",
        **settings,
    )
    assert llm.effective_lane == lane
    try:
        return await llm.complete([{"role": "user", "content": "hi"}])
    except LLMError as error:
        return (str(error), error.status_code, error.attempts)


SCENARIOS = {
    "answer": [httpx.Response(200, json=ANSWER)],
    "429 then answer": [
        httpx.Response(429, json={"error": {"message": "slow"}}, headers={"retry-after": "0"}),
        httpx.Response(200, json=ANSWER),
    ],
    "401 echoing the key": [
        httpx.Response(401, json={"error": {"code": "401", "message": f"Access denied: {KEY}"}})
    ],
    "503 twice": [httpx.Response(503, text="busy"), httpx.Response(503, text="busy")],
}


@pytest.mark.anyio
@pytest.mark.parametrize("name", list(SCENARIOS))
@pytest.mark.parametrize("settings", [{}, {"api_version": "2024-10-21", "seed": 1}])
async def test_both_lanes_send_and_see_the_same_on_azure(
    azure: respx.MockRouter, name: str, settings: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTENSEMBLE_LLM_LANE", raising=False)
    seen: dict[str, Any] = {}
    for lane in ("openai", "litellm"):
        route = azure.post(url__startswith=BASE).mock(side_effect=list(SCENARIOS[name]))
        outcome = await one_call(lane, **settings)
        requests = [
            (
                str(call.request.url),
                call.request.headers.get("api-key"),
                json.loads(call.request.content),  # key order may differ, not the content
            )
            for call in route.calls
        ]
        seen[lane] = (outcome, requests)
        azure.routes.clear()

    assert seen["openai"] == seen["litellm"]
    outcome, requests = seen["openai"]
    version = settings.get("api_version", AZURE_DEFAULT_API_VERSION)
    url = f"{BASE}/openai/deployments/my-deployment/chat/completions?api-version={version}"
    assert requests[0][:2] == (url, KEY)
    assert KEY not in str(outcome)
