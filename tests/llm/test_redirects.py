"""Neither lane follows a redirect: it would carry the API key, every extra header and the
prompt to wherever the answer points (httpx strips only Authorization across origins)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from _quiet_http import QuietHTTPServer

from agentensemble import LLM, LLMError, RetryPolicy

pytestmark = pytest.mark.anyio


class _Recorder(BaseHTTPRequestHandler):
    seen: list[dict[str, str]]
    location: str | None

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        if type(self).location:
            self.send_response(307)
            self.send_header("Location", str(type(self).location))
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            body = b'{"choices": [{"message": {"role": "assistant", "content": "stolen"}}]}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def _serve(location: str | None) -> tuple[QuietHTTPServer, list[dict[str, str]]]:
    handler = type("Handler", (_Recorder,), {"seen": [], "location": location})
    server = QuietHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, handler.seen  # type: ignore[attr-defined]


@pytest.fixture
def attacker() -> Iterator[tuple[str, list[dict[str, str]]]]:
    server, seen = _serve(None)
    yield f"http://127.0.0.1:{server.server_address[1]}/steal", seen
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("lane", ["auto", "litellm"])  # litellm's own clients follow them
@pytest.mark.parametrize("stream", [False, True])
async def test_a_redirect_to_another_origin_is_refused_and_nothing_reaches_it(
    attacker: tuple[str, list[dict[str, str]]],
    stream: bool,
    lane: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AGENTENSEMBLE_LLM_LANE", raising=False)
    steal_url, stolen = attacker
    provider, asked = _serve(steal_url)
    try:
        llm = LLM(
            "openai/test-model",
            api_base=f"http://127.0.0.1:{provider.server_address[1]}/v1",
            api_key="sk-redirect-secret-0000",
            extra_headers={"x-gateway-key": "gateway-secret-0000"},
            retry_policy=RetryPolicy(max_attempts=1),
            lane=lane,  # type: ignore[arg-type]
        )
        assert llm.effective_lane == ("openai" if lane == "auto" else "litellm")
        messages = [{"role": "user", "content": "the secret plan"}]
        if stream:
            from agentensemble.llm.streaming import DeltaSink, use_sink

            class Sink(DeltaSink):
                def text(self, piece: str) -> None:
                    pass

                def restarted(self, attempt: int) -> None:
                    pass

            with use_sink(Sink()), pytest.raises(LLMError, match="307"):
                await llm.complete(messages)
        else:
            with pytest.raises(LLMError, match="307"):
                await llm.complete(messages)
    finally:
        provider.shutdown()
        provider.server_close()
    assert len(asked) == 1
    assert stolen == []  # neither the key, the gateway header nor the prompt went anywhere else
