"""Every server the package can run goes through the one hardened setup (serve/_hardened.py),
and each one refuses the same attacks. A new surface declares itself with ``declare_surface``;
this test finds every declaration in the source and fails until the surface has an example
below, so its defences are checked from the day it exists."""

from __future__ import annotations

import contextlib
import importlib
import json
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

import agentensemble
from agentensemble import Agent, Ensemble, Task
from agentensemble.serve._hardened import SURFACES, built, hardened_server
from agentensemble.testing import ScriptedChatModel

pytestmark = pytest.mark.anyio

TOKEN = "a-surface-token-long-enough"
ROOTS = [
    Path(agentensemble.__file__).parent.parent / name
    for name in ("agentensemble", "agentensemble_web", "agentensemble_review")
]


def crew() -> Ensemble:
    agent = Agent(role="Writer", goal="Write", llm=ScriptedChatModel(["a line"] * 5))
    return Ensemble(
        tasks=[Task(description="Write about {topic}", expected_output="x", agent=agent)]
    )


def a2a() -> Any:
    from agentensemble.serve import a2a_app

    return a2a_app(crew, name="w", description="w", url="http://127.0.0.1:9/", token=TOKEN)


def mcp_http() -> Any:
    from agentensemble.serve.mcp_serving import mcp_http_app, mcp_server

    return mcp_http_app(mcp_server({"writer": crew}), port=9, token=TOKEN)


def ag_ui() -> Any:
    from agentensemble.serve import ag_ui_app

    return ag_ui_app(crew, port=9, token=TOKEN)


def web() -> Any:
    from agentensemble_web.app import create_app

    return create_app(TOKEN, "127.0.0.1", 9)


def runs() -> Any:
    from agentensemble.serve import run_api

    return run_api({"writer": crew}, token=TOKEN)


@contextlib.asynccontextmanager
async def in_process(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:9") as http:
        yield http


@contextlib.asynccontextmanager
async def review() -> AsyncIterator[httpx.AsyncClient]:
    """The reference review server is a stdlib threaded server: attacked over a real socket."""
    from agentensemble_review.server import ReviewServer

    with ReviewServer(port=0, token=TOKEN) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            yield http


# surface -> (a client of it, the path taking a JSON body)
EXAMPLES: dict[str, tuple[Callable[[], Any], str]] = {
    "a2a": (lambda: in_process(a2a()), "/"),
    "mcp-http": (lambda: in_process(mcp_http()), "/mcp"),
    "web": (lambda: in_process(web()), "/api/events"),
    "review": (review, "/reviews/r-1/decision"),
    "run-api": (lambda: in_process(runs()), "/runs"),
    "ag-ui": (lambda: in_process(ag_ui()), "/"),
}


def declaring_modules() -> dict[str, str]:
    """surface name -> module, for every ``declare_surface("name", ...)`` in the packages."""
    found: dict[str, str] = {}
    for root in ROOTS:
        for path in root.rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for name in re.findall(r'declare_surface\(\s*"([^"]+)"', text):
                if path.name != "_hardened.py":
                    module = path.relative_to(root.parent).with_suffix("").as_posix()
                    found[name] = module.replace("/", ".")
    return found


def test_every_declared_surface_has_an_example_here() -> None:
    declared = declaring_modules()
    for module in declared.values():
        importlib.import_module(module)
    assert set(declared) == set(EXAMPLES), "add an example for each new surface to EXAMPLES"
    assert set(declared) <= set(SURFACES)


SERVER_CLASSES = re.compile(r"uvicorn\.(Config|run)\(|\b(Threading)?HTTPServer\b|socketserver")
TEST_DOUBLES = "agentensemble/testing/"  # the offline model server of the tests: not served


def test_no_server_is_started_past_the_hardened_setup() -> None:
    """uvicorn is configured in one place, which refuses an app that was not hardened, and the
    one stdlib server class is ``HardenedHTTPServer``."""
    offenders = []
    for root in ROOTS:
        for path in root.rglob("*.py"):
            if path.name == "_hardened.py" or TEST_DOUBLES in path.as_posix():
                continue
            for match in SERVER_CLASSES.finditer(path.read_text(encoding="utf-8")):
                offenders.append(f"{path.name}: {match.group(0)}")
    assert offenders == []
    with pytest.raises(TypeError, match="Hardened"):
        hardened_server(lambda scope, receive, send: None)


BIG = "[" + ",".join(["[]"] * 250_000) + "]"  # 750 kB: within the body bound, too many values
ATTACKS = [
    # (what, extra headers, body, expected status)
    ("a foreign Origin", {"Origin": "http://evil.example"}, "{}", 403),
    ("a page on another local port", {"Origin": "http://127.0.0.1:9999"}, "{}", 403),
    ("an opaque Origin", {"Origin": "null"}, "{}", 403),
    ("a cross-site fetch", {"Sec-Fetch-Site": "cross-site"}, "{}", 403),
    ("a text/plain body", {"Content-Type": "text/plain"}, "{}", 415),
    ("no content type", {"Content-Type": ""}, "{}", 415),
    ("an oversized body", {}, json.dumps({"x": "y" * 3_000_000}), 413),
    ("deep nesting", {}, "[" * 10_000 + "]" * 10_000, 400),
    ("too many values", {}, BIG, 413),
    ("a foreign Host", {"Host": "evil.example"}, "{}", (403, 421)),
    ("no token", {"Authorization": ""}, "{}", 401),
]


@pytest.mark.parametrize("surface", sorted(EXAMPLES))
@pytest.mark.parametrize(
    ("what", "headers", "body", "status"), ATTACKS, ids=[a[0] for a in ATTACKS]
)
async def test_each_surface_refuses_each_attack(
    surface: str, what: str, headers: dict[str, str], body: str, status: int | tuple[int, ...]
) -> None:
    connect, path = EXAMPLES[surface]
    sent = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {TOKEN}",
        **headers,
    }
    sent = {key: value for key, value in sent.items() if value}
    if "Host" not in sent and surface == "review":
        sent["Host"] = "127.0.0.1"
    async with connect() as http:
        answer = await http.post(path, content=body.encode(), headers=sent)
    expected = status if isinstance(status, tuple) else (status,)
    assert answer.status_code in expected, (surface, what, answer.status_code, answer.text[:200])
    if surface != "review":  # the stdlib server is hardened by its class (HardenedHTTPServer)
        assert built(surface), f"{surface} was not built through Hardened"


def unpinned(surface: str) -> Any:
    from agentensemble.serve import ag_ui_app, run_api
    from agentensemble.serve.mcp_serving import mcp_http_app, mcp_server

    return {
        "mcp-http": lambda: mcp_http_app(mcp_server({"writer": crew})),
        "ag-ui": lambda: ag_ui_app(crew),
        "run-api": lambda: run_api({"writer": crew}),
    }[surface]()


@pytest.mark.parametrize(
    ("surface", "path"), [("mcp-http", "/mcp"), ("ag-ui", "/"), ("run-api", "/runs")]
)
async def test_a_page_on_another_local_port_is_refused_without_a_port_given(
    surface: str, path: str
) -> None:
    """``mcp_http_app(server)``, ``ag_ui_app(crew)``, ``run_api(...)`` with no ``port``
    took any port as their own: a page at ``http://localhost:3000`` (another local app, another
    origin) opened an MCP session and could call its tools. The port is now the one the request
    came in on."""
    for origin in ("http://localhost:3000", "http://127.0.0.1:9999"):
        async with in_process(unpinned(surface)) as http:
            answer = await http.post(
                path,
                content=b"{}",
                headers={
                    "Origin": origin,
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                },
            )
        assert answer.status_code == 403, (surface, origin, answer.text[:200])


def test_every_connection_sends_small_writes_at_once() -> None:
    """A listener made as ``socket.socket()`` (protocol 0: asyncio does not know it is TCP) still
    gets TCP_NODELAY on each connection, so a streamed event or a keep-alive answer does not wait
    for the client's delayed ACK."""
    import socket

    from agentensemble.serve._hardened import _no_delay

    class Transport:
        def __init__(self, sock: socket.socket) -> None:
            self.sock = sock

        def get_extra_info(self, name: str) -> Any:
            return self.sock if name == "socket" else None

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        with socket.create_connection(listener.getsockname(), timeout=5):
            accepted, _ = listener.accept()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
                _no_delay(Transport(accepted))
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
