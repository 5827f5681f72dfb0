"""The hardened server against connections that never finish (issue 38): 1,100 connections that
never completed their headers locked the A2A agent, the MCP server and the web console out for
good. Real sockets on 127.0.0.1, a lowered cap, bounded counts; every wait is on a condition."""

from __future__ import annotations

import selectors
import socket
import time
from typing import Any

import pytest
from serve_helpers import hardened_serving

from agentensemble import Agent, Ensemble, Task
from agentensemble.serve import a2a_app
from agentensemble.serve._hardened import Limits
from agentensemble.testing import ScriptedChatModel

CARD = "/.well-known/agent-card.json"
WAIT = 30.0  # the bound on every wait below (header deadlines here are 1 to 5 s)


def agent(limits: Limits) -> Any:
    crew = Ensemble(
        tasks=[
            Task(
                description="Write about {topic}",
                expected_output="x",
                agent=Agent(role="W", goal="W", llm=ScriptedChatModel(["x"])),
            )
        ]
    )
    return a2a_app(
        crew, name="w", description="w", url="http://127.0.0.1:9/", allowed_hosts=[], limits=limits
    )


def response(sock: socket.socket) -> bytes:
    """One whole answer: its head, then ``Content-Length`` bytes of body ("" if closed)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def get(port: int, path: str = CARD) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        return response(sock)


def answers_until_closed(socks: list[socket.socket]) -> list[bytes]:
    """What the server sent each socket before closing it; fails if one stays open past WAIT."""
    received = {sock: b"" for sock in socks}
    selector = selectors.DefaultSelector()
    for sock in socks:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    deadline = time.monotonic() + WAIT
    open_ = set(socks)
    while open_ and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.5):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            try:
                chunk = sock.recv(4096)
            except ConnectionError:
                chunk = b""
            if chunk:
                received[sock] += chunk
            else:
                selector.unregister(sock)
                open_.discard(sock)
    selector.close()
    assert not open_, f"{len(open_)} connections were never closed"
    return [received[sock] for sock in socks]


def trickled_until_closed(sock: socket.socket, piece: bytes) -> tuple[bool, bytes]:
    """Send ``piece`` every 0.2 s until the server closes the connection or ``WAIT`` passes:
    whether it closed, and what it answered first."""
    answered = b""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            sock.sendall(piece)
            sock.settimeout(0.2)
            chunk = sock.recv(4096)
        except TimeoutError:
            continue
        except ConnectionError:
            return True, answered
        if not chunk:
            return True, answered
        answered += chunk
    return False, answered


def slowloris(port: int, count: int) -> list[bytes]:
    """``count`` connections that never finish their headers; what each got before it closed."""
    slow = []
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
            sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # never finished
            slow.append(sock)
        return answers_until_closed(slow)
    finally:
        for sock in slow:
            sock.close()


def test_connections_that_never_finish_their_headers_cannot_lock_the_server_out() -> None:
    # the deadline leaves time for all 200 to arrive, so the cap is reached before it passes
    limits = Limits(max_connections=20, header_timeout=5.0)
    with hardened_serving(agent(limits), lifespan="off") as port:
        assert get(port).startswith(b"HTTP/1.1 200")
        answers = slowloris(port, 200)  # ten times the cap
        statuses = {answer[:12] for answer in answers}
        assert statuses <= {b"HTTP/1.1 503", b"HTTP/1.1 408", b""}
        assert any(a.startswith(b"HTTP/1.1 503") for a in answers)  # over the cap: at once
        assert any(a.startswith(b"HTTP/1.1 408") for a in answers)  # too slow: dropped
        assert get(port).startswith(b"HTTP/1.1 200")  # the agent answers again


def test_headers_sent_in_pieces_within_the_deadline_are_served() -> None:
    limits = Limits(header_timeout=WAIT)
    with (
        hardened_serving(agent(limits), lifespan="off") as port,
        socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock,
    ):
        for piece in (b"GET ", CARD.encode(), b" HTTP/1.1\r\nHost: 127.", b"0.0.1\r\n\r\n"):
            sock.sendall(piece)
        first = response(sock)
        sock.sendall(f"GET {CARD} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        second = response(sock)  # the same kept-alive connection serves the next request
    assert first.startswith(b"HTTP/1.1 200") and second.startswith(b"HTTP/1.1 200")


def test_a_header_block_over_the_bound_is_refused() -> None:
    size = 100 * 1024
    limits = Limits(max_header_bytes=16 * 1024)
    with (
        hardened_serving(agent(limits), lifespan="off") as port,
        socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock,
    ):
        head = f"GET {CARD} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {'a' * size}\r\n\r\n"
        try:
            sock.sendall(head.encode())
            answer = response(sock)
        except ConnectionError:
            answer = b""
    assert answer.startswith(b"HTTP/1.1 431") or answer == b""


def test_the_review_server_caps_its_connections() -> None:
    """The stdlib review server gets the same bounds (``HardenedHTTPServer``): past the cap a
    connection gets 503 at once. The head deadline is long here, so the cap is reached however
    slowly the connections arrive (the deadline has tests of its own below)."""
    from agentensemble_review.server import ReviewServer

    server = ReviewServer(port=0, token="review-token-long-enough")
    server.bind()
    httpd = server._httpd
    assert httpd is not None
    httpd.limits = Limits(max_connections=10, header_timeout=WAIT * 2)
    held: list[socket.socket] = []
    with server:
        port = server.port
        try:
            for _ in range(10):
                sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
                sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # never ends
                held.append(sock)
            deadline = time.monotonic() + WAIT
            while httpd._live < 10 and time.monotonic() < deadline:  # all ten taken in
                time.sleep(0.05)
            assert httpd._live == 10
            assert get(port, "/health").startswith(b"HTTP/1.1 503")  # over the cap: at once
        finally:
            for sock in held:
                sock.close()
        deadline = time.monotonic() + WAIT
        while httpd._live and time.monotonic() < deadline:  # the ten gone, their places freed
            time.sleep(0.05)
        again = get(port, "/health")
        assert again.startswith(b"HTTP/1.1 ") and not again.startswith(b"HTTP/1.1 503")


def test_the_rest_of_a_body_answered_early_is_not_taken_for_a_header_block() -> None:
    """A body refused by its declared size (413 before it is read) goes on arriving: those bytes
    are not a request head (they got 431 once); the next request is served once it is in."""
    limits = Limits(max_body_bytes=100_000, max_header_bytes=16 * 1024)
    with (
        hardened_serving(agent(limits), lifespan="off") as port,
        socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock,
    ):
        size = 200_000
        sock.sendall(
            f"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {size}\r\n\r\n".encode()
        )
        refused = response(sock)
        try:
            sock.sendall(b"x" * size)
            sock.sendall(f"GET {CARD} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            after = response(sock)
        except ConnectionError:  # the server closed first: what the test wants
            after = b""
    assert refused.startswith(b"HTTP/1.1 413")
    assert after.startswith(b"HTTP/1.1 200")


def test_a_body_trickled_after_an_early_answer_cannot_hold_the_connection() -> None:
    """uvicorn's keep-alive timer is cancelled by every byte: the rest of a body answered early,
    sent a byte at a time, held the connection for ever. It now has the header deadline."""
    limits = Limits(max_body_bytes=100, header_timeout=1.0)
    with (
        hardened_serving(agent(limits), lifespan="off") as port,
        socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock,
    ):
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000\r\n\r\n"
        )
        refused = response(sock)
        closed, _ = trickled_until_closed(sock, b"x")  # a byte at a time, until cut off
    assert refused.startswith(b"HTTP/1.1 413")
    assert closed


def _crew() -> Ensemble:
    model = ScriptedChatModel(["x"])
    return Ensemble(
        tasks=[
            Task(
                description="W {topic}",
                expected_output="x",
                agent=Agent(role="W", goal="W", llm=model),
            )
        ]
    )


def _served(surface: str, limits: Limits) -> tuple[Any, str]:
    """The app of ``surface`` built with ``limits``, and its path taking a JSON body."""
    from agentensemble.serve import ag_ui_app, run_api
    from agentensemble.serve.mcp_serving import mcp_http_app, mcp_server

    if surface == "run-api":
        return run_api({"crew": _crew}, limits=limits), "/runs"
    if surface == "ag-ui":
        return ag_ui_app(_crew, limits=limits), "/"
    if surface == "a2a":
        return agent(limits), "/"
    return mcp_http_app(mcp_server({"crew": _crew}), limits=limits), "/mcp"


@pytest.mark.parametrize("surface", ["run-api", "ag-ui", "a2a", "mcp-http"])
def test_a_body_trickled_before_any_answer_cannot_hold_the_connection(surface: str) -> None:
    """The header deadline ended with the headers: a body under the size bound sent a byte at a
    time held its connection for ever while the app waited for it, so the connection cap's
    worth of them locked every caller out. The body now has a deadline of its own (408)."""
    limits = Limits(header_timeout=1.0)  # body_timeout: the header deadline by default
    app, path = _served(surface, limits)
    with (
        hardened_serving(app) as port,
        socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock,
    ):
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: 1000\r\n\r\n".encode()
        )
        closed, answered = trickled_until_closed(sock, b" ")  # a byte at a time, until cut off
    assert answered.startswith(b"HTTP/1.1 408"), answered[:100]
    assert b"the body did not arrive within 1 s" in answered
    assert closed


def test_the_review_server_drops_a_trickled_body() -> None:
    """The stdlib review server read a body under the socket timeout alone, which restarts with
    every byte: a body trickled a byte at a time held a thread and a connection for ever."""
    from agentensemble_review.server import ReviewServer

    server = ReviewServer(port=0, token="review-token-long-enough")
    server.bind()
    assert server._httpd is not None
    server._httpd.limits = Limits(header_timeout=1.0)
    with server, socket.create_connection(("127.0.0.1", server.port), timeout=WAIT) as sock:
        sock.sendall(
            b"POST /reviews HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n"
        )
        closed, _ = trickled_until_closed(sock, b" ")  # a byte at a time, until cut off
        assert closed
        assert get(server.port, "/health").startswith(b"HTTP/1.")  # still serving


def test_the_review_server_drops_headers_trickled_after_the_request_line() -> None:
    """The stdlib reads the header lines inside ``parse_request``, after the request line; the
    head deadline was cancelled as it began, so a request line followed by a header byte now and
    then was cut only by the socket timeout, which restarts with every byte: held for ever."""
    from agentensemble_review.server import ReviewServer

    server = ReviewServer(port=0, token="review-token-long-enough")
    server.bind()
    assert server._httpd is not None
    server._httpd.limits = Limits(header_timeout=1.0)
    with server, socket.create_connection(("127.0.0.1", server.port), timeout=WAIT) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        closed, _ = trickled_until_closed(sock, b"a")  # never ends its header line
        assert closed
        assert get(server.port, "/health").startswith(b"HTTP/1.")  # still serving
