"""The openai lane: OpenAI-compatible endpoints reached with the official ``openai`` package.

Which calls take it is one pure rule, ``choose_lane`` (documented in docs/models.md):

- ``LLM(..., lane="litellm")`` or ``AGENTENSEMBLE_LLM_LANE=litellm`` in the environment: litellm.
- Otherwise the **openai lane** when the model is an OpenAI one (``openai/<name>``, or a bare
  ``gpt-*``/``chatgpt-*`` name), whatever ``api_base`` it points at (OpenAI itself, vLLM, Ollama,
  LM Studio, a gateway...), and every extra setting is one the OpenAI chat API takes (``seed``,
  ``top_p``, ``extra_headers``...). A litellm-only setting (``mock_response``, ``drop_params``,
  ``custom_llm_provider``...) sends the call through litellm, which knows what to do with it.
- **Azure OpenAI** (``azure/<deployment>``) takes the openai lane too when it authenticates with
  an API key (``api_key=``, ``AZURE_OPENAI_API_KEY`` or ``AZURE_API_KEY``) and its endpoint is
  known (``api_base`` or ``AZURE_API_BASE``); Entra ID tokens and the rest go through litellm.
- Names litellm rewrites requests for go through litellm, so the request stays the same: the
  reasoning models (``o1*``, ``o3*``, ``o4*``, ``gpt-5*``) and ``*instruct*`` models.
- Everything else: litellm.

The lane sends the same ``request_kwargs`` litellm gets (the one conversion in ``_messages``)
through ``openai.AsyncOpenAI`` / ``AsyncAzureOpenAI`` and reads the answer with the same
``read_response`` / ``StreamAssembler``. What it owns is only the client's life:

- **One client per event loop and endpoint** (base URL, key, organisation, project, Azure API
  version), made on the first call and shared by every later call and every run in flight, so
  keep-alive connections are reused; its connection pool is bounded (``MAX_CONNECTIONS``). The
  transport is aiohttp (``openai.DefaultAioHttpClient``) when ``httpx-aiohttp`` is installed,
  httpx otherwise or with ``DISABLE_AIOHTTP_TRANSPORT=true`` (litellm's switch, for respx):
  httpcore's pool re-scans every connection for every queued request, so its cost per request
  grows with the requests in flight; aiohttp's does not. **One TLS context**
  for the whole process (building one costs milliseconds of CPU and ~100 KiB per client).
- A loop's clients close while the loop shuts down (``asyncio.run`` ending: no unclosed sockets);
  the clients of closed loops are dropped when a new loop needs one.
- **Bounded bodies**: every response body is bounded by its decoded size while it arrives
  (``_body_bound``: a huge answer, a gzip bomb, a huge error body are cut, never held whole).
- **No hidden retries** (``max_retries=0``: our ``RetryPolicy`` is the only layer) and **no
  redirects** (a redirect would carry the key, extra headers and the prompt elsewhere).
- Errors arrive as the SDK raises them; ``_failures`` classifies them like litellm's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import importlib.util
import json
import os
import sys
import threading
import weakref
from collections.abc import AsyncGenerator, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from agentensemble._base.timeouts import within
from agentensemble.llm._config_checks import provider_of
from agentensemble.llm._failures import ErrorInAnswer
from agentensemble.llm._litellm_stream import StreamAttempts, relay
from agentensemble.llm._messages import read_response
from agentensemble.llm.stream_assembly import StreamAssembler
from agentensemble.llm.types import ChatResponse
from agentensemble.untrusted import aparse_json

if TYPE_CHECKING:
    import ssl

Lane = Literal["openai", "litellm"]
LaneSetting = Literal["auto", "litellm"]

#: The environment variable that forces litellm for every ``LLM`` left at ``lane="auto"``.
LANE_VARIABLE = "AGENTENSEMBLE_LLM_LANE"
#: OpenAI model names whose requests litellm rewrites (see the module doc).
_REWRITTEN_BY_LITELLM = ("o1", "o3", "o4", "gpt-5")
#: Settings the OpenAI chat completions API takes in the request body.
OPENAI_BODY_SETTINGS = frozenset(
    {
        "audio",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "max_completion_tokens",
        "metadata",
        "modalities",
        "n",
        "parallel_tool_calls",
        "prediction",
        "presence_penalty",
        "prompt_cache_key",
        "reasoning_effort",
        "response_format",
        "safety_identifier",
        "seed",
        "service_tier",
        "stop",
        "store",
        "tool_choice",
        "top_logprobs",
        "top_p",
        "user",
        "verbosity",
        "web_search_options",
    }
)
#: Settings the lane turns into headers, query parameters, body additions or the client.
OPENAI_TRANSPORT_SETTINGS = frozenset(
    {"extra_headers", "extra_body", "extra_query", "organization", "api_key", "api_version"}
)
#: Where litellm finds an Azure key and endpoint in the environment, in its order.
AZURE_KEY_VARIABLES = ("AZURE_OPENAI_API_KEY", "AZURE_API_KEY")
AZURE_BASE_VARIABLE = "AZURE_API_BASE"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: The API version litellm 1.106.2 sends to Azure when none is set (``AZURE_DEFAULT_API_VERSION``).
AZURE_DEFAULT_API_VERSION = "2025-02-01-preview"
#: The path every call posts to (the Azure client puts ``/deployments/<model>`` before it).
CHAT_PATH = "/chat/completions"
#: Connections one client keeps open at most (requests beyond wait for one in the pool's queue).
MAX_CONNECTIONS = 1000
#: The ``openai`` package's request header asking it not to read the response body itself.
UNREAD_BODY_HEADER = "X-Stainless-Raw-Response"
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


def lane_setting_from_environment(environ: Mapping[str, str] | None = None) -> LaneSetting:
    """``litellm`` when ``AGENTENSEMBLE_LLM_LANE`` says so (any case), else ``auto``."""
    value = (os.environ if environ is None else environ).get(LANE_VARIABLE, "")
    return "litellm" if value.strip().lower() == "litellm" else "auto"


def choose_lane(
    model: str,
    extra_settings: Iterable[str] = (),
    setting: LaneSetting = "auto",
    environ: Mapping[str, str] | None = None,
    *,
    has_key: bool = False,
    api_base: str | None = None,
) -> Lane:
    """The lane a call to ``model`` with these extra setting names takes (see the module doc);
    ``has_key``/``api_base``: whether ``LLM`` was given a key and a base URL (Azure needs both,
    here or in the environment)."""
    env = os.environ if environ is None else environ
    if setting == "litellm" or lane_setting_from_environment(env) == "litellm":
        return "litellm"
    provider = provider_of(model)
    if provider == "azure":
        keyed = has_key or any(env.get(name) for name in AZURE_KEY_VARIABLES)
        if not (keyed and (api_base or env.get(AZURE_BASE_VARIABLE))):
            return "litellm"
    elif provider != "openai":
        return "litellm"
    name = model.split("/", 1)[-1].lower()
    if name.startswith(_REWRITTEN_BY_LITELLM) or "instruct" in name:
        return "litellm"
    allowed = OPENAI_BODY_SETTINGS | OPENAI_TRANSPORT_SETTINGS
    if any(name not in allowed for name in extra_settings):
        return "litellm"
    return "openai"


# -- the request: which client, which arguments (pure, no network)


@dataclass(frozen=True)
class Endpoint:
    """What a client is made for; calls with equal endpoints share one client (holds the key:
    never log it)."""

    base_url: str
    api_key: str
    organization: str | None = None
    project: str | None = None
    azure_version: str | None = None  # set for Azure OpenAI

    def __repr__(self) -> str:  # the key stays out of logs and errors
        return f"Endpoint(base_url={self.base_url!r}, azure={self.azure_version is not None})"


@dataclass(frozen=True)
class Request:
    """One chat-completions call: the endpoint, the JSON body and the request options (extra
    headers and query parameters, the timeout) for the client's ``post``."""

    endpoint: Endpoint
    body: dict[str, Any]
    options: dict[str, Any]

    def __repr__(self) -> str:
        return f"Request({self.endpoint!r}, model={self.body.get('model')!r})"

    def streaming(self) -> Request:
        """This request asking for a stream with usage, as litellm asks for it."""
        body = dict(self.body, stream=True, stream_options={"include_usage": True})
        return dataclasses.replace(self, body=body)


def model_name(model: str) -> str:
    """The name the endpoint knows: ``openai/gpt-4o`` → ``gpt-4o``, ``azure/dep`` → ``dep``."""
    return model.split("/", 1)[1] if model.lower().startswith(("openai/", "azure/")) else model


def base_url(api_base: str | None, environ: Mapping[str, str] | None = None) -> str:
    """``api_base``, else ``OPENAI_BASE_URL`` / ``OPENAI_API_BASE``, else OpenAI's own."""
    env = os.environ if environ is None else environ
    return api_base or env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_BASE") or DEFAULT_BASE_URL


def _message(message: Any) -> Any:
    """A message without its ``None`` fields, as litellm sends it."""
    if isinstance(message, dict):
        return {key: value for key, value in message.items() if value is not None}
    return message


def build_request(kwargs: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Request:
    """The call for ``LLM.request_kwargs(...)``: pure, no network."""
    env = os.environ if environ is None else environ
    model = str(kwargs["model"])
    if model.lower().startswith("azure/"):
        key = kwargs.get("api_key") or env.get("AZURE_OPENAI_API_KEY") or env.get("AZURE_API_KEY")
        version = kwargs.get("api_version") or env.get("AZURE_API_VERSION")
        endpoint = Endpoint(
            base_url=str(kwargs.get("api_base") or env.get(AZURE_BASE_VARIABLE) or ""),
            api_key=str(key or ""),
            azure_version=str(version or AZURE_DEFAULT_API_VERSION),
        )
    else:
        endpoint = Endpoint(
            base_url=base_url(kwargs.get("api_base"), env),
            api_key=str(kwargs.get("api_key") or env.get("OPENAI_API_KEY") or ""),
            organization=kwargs.get("organization") or env.get("OPENAI_ORG_ID"),
            project=env.get("OPENAI_PROJECT_ID"),
        )
    body = {name: value for name, value in kwargs.items() if name not in _CALL_SETTINGS}
    body["model"] = model_name(model)
    body["messages"] = [_message(message) for message in body.get("messages", [])]
    body.update(kwargs.get("extra_body") or {})
    options: dict[str, Any] = {"timeout": float(kwargs.get("timeout") or 600.0)}
    if kwargs.get("extra_headers"):
        options["headers"] = {str(k): str(v) for k, v in kwargs["extra_headers"].items()}
    if kwargs.get("extra_query"):
        options["params"] = dict(kwargs["extra_query"])
    return Request(endpoint, body, options)


# -- the clients: one per loop and endpoint, closed with their loop


@functools.cache
def shared_tls_context() -> ssl.SSLContext:
    """The process's one TLS context (httpx's defaults: certifi, ``SSL_CERT_FILE``...)."""
    import httpx

    return httpx.create_ssl_context()


#: litellm's own switch for its transport, honoured here too: ``true`` puts both lanes on httpx
#: (what respx, and other httpx-level mocks, can see).
AIOHTTP_SWITCH = "DISABLE_AIOHTTP_TRANSPORT"


def transport(environ: Mapping[str, str] | None = None) -> Literal["aiohttp", "httpx"]:
    """aiohttp when ``httpx-aiohttp`` is installed and ``DISABLE_AIOHTTP_TRANSPORT`` is not
    ``true``; httpx otherwise."""
    env = os.environ if environ is None else environ
    if env.get(AIOHTTP_SWITCH, "").strip().lower() == "true":
        return "httpx"
    return "aiohttp" if _aiohttp_installed() else "httpx"


@functools.cache
def _aiohttp_installed() -> bool:
    return importlib.util.find_spec("httpx_aiohttp") is not None


def _new_client(endpoint: Endpoint, kind: Literal["aiohttp", "httpx"]) -> Any:
    import httpx
    import openai

    from agentensemble.llm._body_bound import bound_bodies

    options: dict[str, Any] = {
        "limits": httpx.Limits(
            max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS
        ),
        "verify": shared_tls_context(),
        # never: a redirect would carry the api-key header, extra headers and the prompt to
        # wherever it points (httpx strips only Authorization across origins)
        "follow_redirects": False,
        # every body (answer, error, stream) bounded by its decoded size as it arrives
        "event_hooks": {"response": [bound_bodies]},
    }
    if kind == "aiohttp":
        http_client = openai.DefaultAioHttpClient(**options)
    else:
        http_client = openai.DefaultAsyncHttpxClient(**options)
    common: dict[str, Any] = {"max_retries": 0, "http_client": http_client}
    if endpoint.azure_version is not None:
        return openai.AsyncAzureOpenAI(
            api_key=endpoint.api_key or None,
            azure_endpoint=endpoint.base_url,
            api_version=endpoint.azure_version,
            **common,
        )
    return openai.AsyncOpenAI(
        api_key=endpoint.api_key or None,  # none: LLM.check_settings has said so already
        base_url=endpoint.base_url,
        organization=endpoint.organization,
        project=endpoint.project,
        **common,
    )


class LoopClients:
    """The clients of one event loop, one per endpoint; used from that loop's thread only."""

    def __init__(self) -> None:
        self.clients: dict[tuple[Endpoint, str], Any] = {}
        self._closer: AsyncGenerator[None, None] | None = None

    def client(self, endpoint: Endpoint) -> Any:
        """The endpoint's client on the transport in force (made on its first call)."""
        kind = transport()
        client = self.clients.get((endpoint, kind))
        if client is None or client.is_closed():
            client = self.clients[endpoint, kind] = _new_client(endpoint, kind)
        return client

    async def watch_loop_end(self) -> None:
        """Close the clients when their loop shuts down (``asyncio.run`` ending), not never.

        An async generator started in a loop is closed by that loop's ``shutdown_asyncgens()``,
        which ``asyncio.run`` awaits before closing the loop: the connections end while the loop
        still runs, so no socket is left unclosed.
        """
        if self._closer is not None:
            return
        closer = self._closer = self._close_at_loop_end()
        await closer.__anext__()

    async def _close_at_loop_end(self) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            clients, self.clients = self.clients, {}
            for client in clients.values():
                await client.close()


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopClients]
_clients = weakref.WeakKeyDictionary()
_clients_lock = threading.Lock()


def _loop_clients() -> LoopClients:
    loop = asyncio.get_running_loop()
    with _clients_lock:
        clients = _clients.get(loop)
        if clients is None:
            # A client's connections hold their loop, so the weak map alone would keep every
            # loop alive: drop the clients of closed loops whenever a new loop needs some.
            for closed in [other for other in _clients if other.is_closed()]:
                del _clients[closed]
            clients = _clients[loop] = LoopClients()
        return clients


async def client_for(endpoint: Endpoint) -> Any:
    """The running loop's client for ``endpoint`` (the SDK imported off the loop the first
    time: it takes a few hundred milliseconds)."""
    if "openai" not in sys.modules:
        await asyncio.to_thread(importlib.import_module, "openai")
    clients = _loop_clients()
    await clients.watch_loop_end()
    return clients.client(endpoint)


# -- the calls


def finish_reason(value: str | None) -> str | None:
    """A finish reason as litellm maps it (unknown ones to ``stop``; none stays none)."""
    return None if value is None else _FINISH_REASONS.get(str(value), "stop")


async def complete(request: Request, *, provider: str, label: str) -> ChatResponse:
    """One model turn; the SDK's errors raised as they are, for ``_failures`` to classify.

    Sent with the client's ``post`` (the SDK's documented call for any endpoint) rather than
    ``chat.completions.create``: ``create`` walks every message and tool spec against its typed
    parameters on each call (most of the SDK's CPU per request, measured in
    benchmarks/results.d/openai-lane.md), where our body is already the plain JSON litellm
    sends. The answer is read as untrusted JSON (bounded size and depth) into what
    ``read_response`` needs: a body that is not JSON is an invalid answer, not an empty one.
    """
    import httpx

    client = await client_for(request.endpoint)
    # the SDK's own switch to hand the body over unread (else it reads all of it first)
    headers = {**request.options.get("headers", {}), UNREAD_BODY_HEADER: "stream"}
    answer_of = await client.post(
        CHAT_PATH,
        cast_to=httpx.Response,
        body=request.body,
        options={**request.options, "headers": headers},
    )
    raw = getattr(answer_of, "http_response", answer_of)  # the SDK's wrapper around it
    content = await raw.aread()  # bounded while it arrives (``_body_bound``)
    answer = await aparse_json(content, what="the model server's answer")
    if not isinstance(answer, dict):
        start = bytes(content[:200]).decode("utf-8", "replace")
        raise json.JSONDecodeError("the answer is not a JSON object", start, 0)
    if answer.get("error") and not answer.get("choices"):  # a gateway's failure, said in a 200
        raise ErrorInAnswer(answer["error"])
    response = read_response(answer, provider=provider, label=label)
    return dataclasses.replace(response, finish_reason=finish_reason(response.finish_reason))


async def stream_turn(
    request: Request, state: StreamAttempts, guard: float, provider: str
) -> ChatResponse:
    """Stream one attempt of a model call (``request.streaming()``): text pieces to the sink,
    chunks to the same ``StreamAssembler`` litellm's stream feeds."""
    if state.showed_text:
        state.sink.restarted(state.attempts)
        state.showed_text = False
    client = await client_for(request.endpoint)
    assembler = StreamAssembler(provider)
    from openai import AsyncStream
    from openai.types.chat import ChatCompletionChunk

    # opening is bounded by ``guard`` as a whole (the SDK's timeout bounds each read only, so
    # headers dripped a byte at a time held it for as long as the drip lasted), each chunk and
    # the whole stream by ``relay``'s deadline
    opened = client.post(
        CHAT_PATH,
        cast_to=ChatCompletionChunk,
        body=request.body,
        options=request.options,
        stream=True,
        stream_cls=AsyncStream[ChatCompletionChunk],
    )
    async with await within(opened, guard) as stream:
        await relay(stream, assembler, state, guard)
    answer = assembler.response()
    return dataclasses.replace(answer, finish_reason=finish_reason(answer.finish_reason))


__all__ = [
    "AIOHTTP_SWITCH",
    "AZURE_BASE_VARIABLE",
    "AZURE_DEFAULT_API_VERSION",
    "AZURE_KEY_VARIABLES",
    "CHAT_PATH",
    "LANE_VARIABLE",
    "MAX_CONNECTIONS",
    "OPENAI_BODY_SETTINGS",
    "OPENAI_TRANSPORT_SETTINGS",
    "Endpoint",
    "Lane",
    "LaneSetting",
    "Request",
    "build_request",
    "choose_lane",
    "client_for",
    "complete",
    "lane_setting_from_environment",
    "model_name",
    "stream_turn",
    "transport",
]
