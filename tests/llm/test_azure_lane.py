"""Azure OpenAI on the openai lane: the request litellm would send, the same answers and errors.

A local server plays the Azure resource (its deployment path, ``api-version`` query and
``api-key`` header recorded); each scenario runs on both lanes and the requests and outcomes are
compared.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from _quiet_http import QuietHTTPServer

from agentensemble import LLM, RetryPolicy
from agentensemble.errors import LLMError
from agentensemble.llm._openai_client import AZURE_DEFAULT_API_VERSION, choose_lane

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
#: (status, body, headers) the resource answers, one per request.
Reply = tuple[int, str, dict[str, str]]


class AzureResource:
    """A local stand-in for an Azure OpenAI resource: scripted answers, every request recorded."""

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.seen: list[tuple[str, str | None, Any]] = []
        resource = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                resource.seen.append((self.path, self.headers.get("api-key"), json.loads(body)))
                status, text, headers = resource.script.pop(0)
                data = text.encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def azure() -> Iterator[AzureResource]:
    resource = AzureResource()
    yield resource
    resource.close()


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


async def one_call(lane: str, base: str, **settings: Any) -> Any:
    llm = LLM(
        "azure/my-deployment",
        api_base=base,
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
        return (str(error).replace(base, "BASE"), error.status_code, error.attempts)


ERROR_429 = json.dumps({"error": {"message": "slow"}})
ERROR_401 = json.dumps({"error": {"code": "401", "message": f"Access denied: {KEY}"}})
SCENARIOS: dict[str, list[Reply]] = {
    "answer": [(200, json.dumps(ANSWER), {})],
    "429 then answer": [(429, ERROR_429, {"retry-after": "0"}), (200, json.dumps(ANSWER), {})],
    "401 echoing the key": [(401, ERROR_401, {})],
    "503 twice": [(503, "busy", {}), (503, "busy", {})],
}


@pytest.mark.anyio
@pytest.mark.parametrize("name", list(SCENARIOS))
@pytest.mark.parametrize("settings", [{}, {"api_version": "2024-10-21", "seed": 1}])
async def test_both_lanes_send_and_see_the_same_on_azure(
    azure: AzureResource, name: str, settings: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTENSEMBLE_LLM_LANE", raising=False)
    seen: dict[str, Any] = {}
    for lane in ("openai", "litellm"):
        azure.script, azure.seen = list(SCENARIOS[name]), []
        outcome = await one_call(lane, azure.base, **settings)
        seen[lane] = (outcome, azure.seen)

    assert seen["openai"] == seen["litellm"]
    outcome, requests = seen["openai"]
    version = settings.get("api_version", AZURE_DEFAULT_API_VERSION)
    path = f"/openai/deployments/my-deployment/chat/completions?api-version={version}"
    assert requests[0][:2] == (path, KEY)
    assert requests[0][2]["messages"] == [{"role": "user", "content": "hi"}]
    assert KEY not in str(outcome)
