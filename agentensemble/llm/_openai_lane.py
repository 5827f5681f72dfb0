"""The openai lane: chat completions sent straight to an OpenAI-compatible endpoint over httpx.

Why httpx and not the openai SDK: both talk the same HTTP, but importing the SDK costs ~0.4 s and
~26 MiB in a fresh process (httpx: ~0.05 s, ~5 MiB; measured, see benchmarks/RESULTS.md), and
the point of this lane is a fast first answer and little CPU per request. Nothing happens at
import: httpx is imported on the first call.

- **Clients per event loop**, created on the first call in that loop and reused by every later
  call on it, so keep-alive connections are reused (no new TCP or TLS handshake per call): one
  client for calls made one at a time, one more per 8 concurrent calls (``_LoopClients``).
  A loop's clients close while the loop shuts down (``asyncio.run`` ending: no unclosed
  sockets), and the clients of closed loops are dropped when a new loop needs one
  (``asyncio.run`` per call then does not pile up clients and loops).
- **No hidden retries**: httpx does not retry; our ``RetryPolicy`` is the only layer.
- **Errors as the transport gives them**: httpx's timeout and connection errors, or
  ``httpx.HTTPStatusError`` carrying the response (its headers give ``Retry-After``). They are
  classified by ``_failures`` exactly like the same failures arriving through litellm.
- **The request litellm would send** for these models: the same body (``messages``, ``tools``,
  ``max_tokens``...; ``None`` fields dropped from messages, as litellm does), the same JSON
  encoding, the same ``Authorization``, ``OpenAI-Organization`` and ``OpenAI-Project`` headers.

Streaming is ``_openai_stream.stream_turn``: the same request with ``"stream": true``, the
response read as server-sent events.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import weakref
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any

from agentensemble.untrusted import aparse_json

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: The API version litellm 1.106.2 sends to Azure when none is set (``AZURE_DEFAULT_API_VERSION``).
AZURE_DEFAULT_API_VERSION = "2025-02-01-preview"
#: Request settings that are not part of the JSON body.
_CALL_SETTINGS = frozenset(
    {
        "timeout",
        "max_retries",
        "api_base",
        "api_key",
        "extra_headers",
        "extra_body",
        "extra_query",
        "organization",
        "api_version",
    }
)
#: Finish reasons some OpenAI-compatible servers send, as litellm normalises them.
_FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "function_call",
    "content_filter": "content_filter",
    "eos": "stop",
    "eos_token": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClients]
_clients = weakref.WeakKeyDictionary()
_clients_lock = threading.Lock()


@dataclass(frozen=True)
class OpenAIRequest:
    """One chat-completions request, ready to send (headers hold the key: never log them)."""

    url: str
    headers: dict[str, str]
    body: bytes
    params: dict[str, Any] | None
    timeout: float

    def __repr__(self) -> str:  # the key is in the headers
        return f"OpenAIRequest(url={self.url!r}, bytes={len(self.body)})"


def model_name(model: str) -> str:
    """The name the endpoint knows: ``openai/gpt-4o`` → ``gpt-4o``, ``azure/dep`` → ``dep``."""
    return model.split("/", 1)[1] if model.lower().startswith(("openai/", "azure/")) else model


def base_url(api_base: str | None, environ: Mapping[str, str] | None = None) -> str:
    """``api_base``, else ``OPENAI_BASE_URL`` / ``OPENAI_API_BASE``, else OpenAI's own."""
    env = os.environ if environ is None else environ
    return api_base or env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_BASE") or DEFAULT_BASE_URL


def _message(message: Any) -> Any:
    if isinstance(message, dict):
        return {key: value for key, value in message.items() if value is not None}
    return message


def build_request(
    kwargs: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> OpenAIRequest:
    """The HTTP request for ``LLM.request_kwargs(...)``: pure, no network, no client."""
    env = os.environ if environ is None else environ
    if str(kwargs["model"]).lower().startswith("azure/"):
        return _azure_request(kwargs, env)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    key = kwargs.get("api_key") or env.get("OPENAI_API_KEY")
    if key:
        headers["Authorization"] = f"Bearer {key}"
    organization = kwargs.get("organization") or env.get("OPENAI_ORG_ID")
    if organization:
        headers["OpenAI-Organization"] = str(organization)
    project = env.get("OPENAI_PROJECT_ID")
    if project:
        headers["OpenAI-Project"] = project
    url = base_url(kwargs.get("api_base"), env).rstrip("/") + "/chat/completions"
    extra_query = kwargs.get("extra_query")
    return _request(kwargs, url, headers, dict(extra_query) if extra_query else None)


def _azure_request(kwargs: Mapping[str, Any], env: Mapping[str, str]) -> OpenAIRequest:
    """Azure OpenAI: the deployment in the path, ``api-version`` in the query, an ``api-key``
    header; where litellm looks for each (``AZURE_API_BASE``, ``AZURE_API_VERSION``...)."""
    key = kwargs.get("api_key") or env.get("AZURE_OPENAI_API_KEY") or env.get("AZURE_API_KEY")
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if key:
        headers["api-key"] = str(key)
    base = str(kwargs.get("api_base") or env.get("AZURE_API_BASE") or "").rstrip("/")
    deployment = model_name(str(kwargs["model"]))
    version = kwargs.get("api_version") or env.get("AZURE_API_VERSION") or AZURE_DEFAULT_API_VERSION
    params = {"api-version": str(version), **dict(kwargs.get("extra_query") or {})}
    url = f"{base}/openai/deployments/{deployment}/chat/completions"
    return _request(kwargs, url, headers, params)


def _request(
    kwargs: Mapping[str, Any], url: str, headers: dict[str, str], params: dict[str, Any] | None
) -> OpenAIRequest:
    """The body (what litellm sends) and the rest of the request, for either endpoint kind."""
    headers.update({str(k): str(v) for k, v in (kwargs.get("extra_headers") or {}).items()})
    body = {name: value for name, value in kwargs.items() if name not in _CALL_SETTINGS}
    body["model"] = model_name(str(kwargs["model"]))
    body["messages"] = [_message(message) for message in body.get("messages", [])]
    body.update(kwargs.get("extra_body") or {})
    content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return OpenAIRequest(
        url=url,
        headers=headers,
        body=content.encode("utf-8"),
        params=params,
        timeout=float(kwargs.get("timeout") or 600.0),
    )


class _LoopClients:
    """The httpx clients of one event loop: one while calls come one at a time, more under load.

    httpcore's pool re-checks every connection for every queued request (each check a syscall),
    so its cost per request grows with the square of its concurrency: at 50 concurrent requests
    one client spent ~5 ms of CPU per request. Each client here carries at most
    ``PER_CLIENT`` requests at once; a call takes the least busy one, so sequential calls always
    get the first client and its kept-alive connection. Used from its loop's thread only.
    """

    PER_CLIENT = 8

    def __init__(self) -> None:
        self.clients: list[Any] = []
        self.in_flight: list[int] = []
        self._closer: AsyncGenerator[None, None] | None = None

    def acquire(self) -> int:
        """The index of the client to use (counted busy until ``release``)."""
        best = min(range(len(self.clients)), key=self.in_flight.__getitem__, default=-1)
        if best < 0 or self.in_flight[best] >= self.PER_CLIENT or self.clients[best].is_closed:
            import httpx

            client = httpx.AsyncClient(
                limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100),
                # never: a redirect would carry the api-key header, extra headers and the prompt
                # to wherever it points (httpx strips only Authorization across origins)
                follow_redirects=False,
            )
            if best >= 0 and self.clients[best].is_closed:
                self.clients[best] = client
            else:
                self.clients.append(client)
                self.in_flight.append(0)
                best = len(self.clients) - 1
        self.in_flight[best] += 1
        return best

    def release(self, index: int) -> None:
        self.in_flight[index] -= 1

    async def watch_loop_end(self) -> None:
        """Close the clients when their loop shuts down (``asyncio.run`` ending), not never.

        An async generator started in a loop is closed by that loop's
        ``shutdown_asyncgens()``, which ``asyncio.run`` awaits before closing the loop: the
        clients' connections end while the loop still runs, so no socket is left unclosed.
        """
        if self._closer is not None:
            return
        closer = self._closer = self._close_at_loop_end()
        await closer.__anext__()

    async def _close_at_loop_end(self) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            clients, self.clients, self.in_flight = self.clients, [], []
            for client in clients:
                await client.aclose()


async def loop_clients() -> _LoopClients:
    """The clients of the running event loop (created on its first call, closed at its end)."""
    clients = _loop_clients()
    await clients.watch_loop_end()
    return clients


def _loop_clients() -> _LoopClients:
    loop = asyncio.get_running_loop()
    with _clients_lock:
        clients = _clients.get(loop)
        if clients is None:
            # A client's connections hold their loop, so the weak map alone would keep every
            # loop alive: drop the clients of closed loops whenever a new loop needs some.
            for closed in [other for other in _clients if other.is_closed()]:
                del _clients[closed]
            clients = _clients[loop] = _LoopClients()
        return clients


async def send(request: OpenAIRequest) -> dict[str, Any]:
    """POST the request; the parsed JSON answer, or the transport's or status error raised."""
    import httpx

    clients = await loop_clients()
    index = clients.acquire()
    try:
        response = await clients.clients[index].post(
            request.url,
            content=request.body,
            headers=request.headers,
            params=request.params,
            timeout=httpx.Timeout(request.timeout),
        )
    finally:
        clients.release(index)
    if response.status_code >= 300:  # a redirect is refused, not followed (see above)
        raise httpx.HTTPStatusError(
            f"HTTP {response.status_code} from {request.url}",
            request=response.request,
            response=response,
        )
    answer = await aparse_json(response.content, what="the model server's answer")
    if not isinstance(answer, dict):
        raise json.JSONDecodeError("the answer is not a JSON object", response.text[:200], 0)
    return answer


def finish_reason(value: str | None) -> str | None:
    """A finish reason as litellm maps it (unknown ones to ``stop``; none stays none)."""
    return None if value is None else _FINISH_REASONS.get(str(value), "stop")


def normalise(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer with finish reasons mapped as litellm maps them."""
    for choice in answer.get("choices") or []:
        if isinstance(choice, dict) and choice.get("finish_reason") is not None:
            choice["finish_reason"] = finish_reason(choice["finish_reason"])
    return answer


__all__ = ["DEFAULT_BASE_URL", "OpenAIRequest", "base_url", "build_request", "model_name", "send"]
