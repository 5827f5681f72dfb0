"""HttpFetch against real loopback servers: the happy path on a "public" server (127.0.0.2,
permitted by a test-only switch), and SSRF attacks — redirects to 127.0.0.1 and friends — that
must never reach the internal server (127.0.0.1)."""

from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

import pytest
from _quiet_http import QuietHTTPServer
from builtin_helpers import call, refused

from agentensemble.errors import ConfigurationError
from agentensemble.tools import ToolResult
from agentensemble.tools.builtin import HttpFetch
from agentensemble.tools.builtin.http_fetch import is_public

PAGE = (
    "<html><head><title>T</title><style>p {color: red}</style></head><body>"
    "<h1>Hello</h1><script>alert('x')</script><p>First &amp; <b>bold</b></p></body></html>"
)


class _Quiet(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str = "text/plain") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Internal(_Quiet):
    """The server an attacker wants to reach: counts every request it gets."""

    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        self._send(200, b"INTERNAL SECRET")


class Public(_Quiet):
    release = threading.Event()

    def _drip(self, *, headers_too: bool) -> None:
        """A byte at a time, 0.2 s apart, for up to 60 s: each read is quick, the whole is not."""
        head = b"Content-Type: text/plain\r\nContent-Length: 300\r\n"
        try:
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            if headers_too:
                for index in range(300):
                    self.wfile.write(f"X-Drip-{index}: x\r\n".encode())
                    self.wfile.flush()
                    if type(self).release.wait(0.2):
                        return
            self.wfile.write(head + b"\r\n")
            for _ in range(300):
                self.wfile.write(b"d")
                self.wfile.flush()
                if type(self).release.wait(0.2):
                    return
        except OSError:
            return

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        if parts.path == "/page":
            self._send(200, PAGE.encode(), "text/html; charset=utf-8")
        elif parts.path == "/json":
            self._send(200, b'{"ok": true}', "application/json")
        elif parts.path == "/redirect":
            self.send_response(int(query.get("status", "302")))
            self.send_header("Location", query["to"])
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif parts.path == "/loop":
            self.send_response(302)
            self.send_header("Location", "/loop")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif parts.path == "/hostile-html":  # quadratic or worse for html.parser: hours
            self._send(200, ("<!--" * 250_000).encode(), "text/html")
        elif parts.path == "/big":
            self._send(200, b"y" * 3_000_000)
        elif parts.path == "/binary":
            self._send(200, b"\x89PNG\x00\x00", "image/png")
        elif parts.path == "/slow":
            type(self).release.wait(timeout=30)
            self._send(200, b"late")
        elif parts.path in ("/drip-body", "/drip-headers"):
            self._drip(headers_too=parts.path == "/drip-headers")
        else:
            self._send(404, b"nothing here")


def _serve(host: str, handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    server = QuietHTTPServer((host, 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        Public.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def internal_port() -> Iterator[int]:
    yield from _serve("127.0.0.1", Internal)


@pytest.fixture(scope="module")
def public_port() -> Iterator[int]:
    yield from _serve("127.0.0.2", Public)


ALLOW = [
    "127.0.0.2",
    "127.0.0.1",
    "localhost",
    "::1",
    "::ffff:127.0.0.1",
    "0.0.0.0",
    "2130706433",
    "0x7f000001",
    "169.254.169.254",
    "10.0.0.1",
    "192.168.1.1",
    "metadata.google.internal",
]


def fetcher(**options: object) -> HttpFetch:
    """A fetcher that may reach the "public" test server at 127.0.0.2 and nothing else private.
    The switch is private and test-only: no public option permits internal addresses."""
    tool = HttpFetch(allow=ALLOW, **options)  # type: ignore[arg-type]
    tool._permit_addresses = frozenset({ipaddress.ip_address("127.0.0.2")})
    return tool


def test_an_allowed_page_comes_back_as_text(public_port: int) -> None:
    result = call(fetcher(), url=f"http://127.0.0.2:{public_port}/page")
    assert result.is_success, result.error_message
    assert result.output == "T\nHello\nFirst & bold"


def test_json_comes_back_as_is_and_a_same_site_redirect_is_followed(public_port: int) -> None:
    base = f"http://127.0.0.2:{public_port}"
    assert call(fetcher(), url=f"{base}/json").output == '{"ok": true}'
    assert call(fetcher(), url=f"{base}/redirect?to=/json").output == '{"ok": true}'


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("http://127.0.0.1:{internal}/secret", "private, loopback or otherwise internal"),
        ("http://localhost:{internal}/secret", "private, loopback or otherwise internal"),
        ("http://[::ffff:127.0.0.1]:{internal}/", "otherwise internal"),
        ("http://2130706433:{internal}/", "otherwise internal"),
        ("http://0x7f000001:{internal}/", "otherwise internal"),
        ("http://0.0.0.0:{internal}/", "otherwise internal"),
        ("http://[::1]:{internal}/", "otherwise internal"),
        ("http://169.254.169.254/latest/meta-data/", "otherwise internal"),
        ("http://10.0.0.1/", "otherwise internal"),
        ("http://192.168.1.1/", "otherwise internal"),
        ("http://evil.example/", "not on this tool's allow-list"),
        ("file:///etc/passwd", "only http and https"),
        ("gopher://127.0.0.1:{internal}/", "only http and https"),
        ("http://x@127.0.0.1:{internal}/", "user name or password"),
    ],
)
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_an_internal_address_is_refused_before_connecting(
    public_port: int, internal_port: int, target: str, why: str, status: int
) -> None:
    hits = Internal.hits
    location = target.format(internal=internal_port)
    url = f"http://127.0.0.2:{public_port}/redirect?status={status}&to={location}"
    result = call(fetcher(), url=url)
    assert refused(result, why)
    assert "INTERNAL SECRET" not in (result.error_message or "") + result.output
    assert Internal.hits == hits  # the internal server never saw a request


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:{internal}/", "otherwise internal"),
        ("http://localhost:{internal}/", "otherwise internal"),
        ("http://127.0.0.2:{public}/page\r\nX-Injected: 1", "whitespace or control characters"),
        ("http://127.0.0.2:{public}/ page", "whitespace or control characters"),
        ("ftp://127.0.0.2:{public}/", "only http and https"),
        ("http://user:pw@127.0.0.2:{public}/page", "user name or password"),
        ("http:///nohost", "has no host"),
        ("http://127.0.0.2:99999/", "not a valid URL"),
        ("http://example.org.evil.example/", "not on this tool's allow-list"),
        ("http://127.0.0.2:{public}/binary", "image/png content, which is not text"),
        ("http://127.0.0.2:{public}/missing", "answered HTTP 404 Not Found: nothing here"),
        ("http://127.0.0.2:{public}/loop", "too many redirects (more than 5)"),
    ],
)
def test_hostile_or_broken_urls_are_refused(
    public_port: int, internal_port: int, url: str, why: str
) -> None:
    hits = Internal.hits
    target = url.format(public=public_port, internal=internal_port)
    assert refused(call(fetcher(), url=target), why)
    assert Internal.hits == hits


def test_only_get_unless_more_methods_are_allowed(public_port: int) -> None:
    url = f"http://127.0.0.2:{public_port}/json"
    get_only = fetcher()
    assert list(get_only.parameters_schema()["properties"]) == ["url"]
    posted = call(get_only, url=url, method="POST", body="x")
    assert refused(posted, "method", "Extra inputs are not permitted")
    more = fetcher(methods=["GET", "HEAD"])
    assert list(more.parameters_schema()["properties"]) == ["url", "method", "body"]
    assert refused(call(more, url=url, method="DELETE"), "method DELETE is not allowed")


def test_a_huge_response_is_cut_at_the_byte_cap(public_port: int) -> None:
    result = call(fetcher(max_bytes=1000), url=f"http://127.0.0.2:{public_port}/big")
    assert result.output == "y" * 1000 + "\n[cut at 1000 bytes]"


def test_a_slow_server_times_out(public_port: int) -> None:
    Public.release.clear()
    try:
        result = call(fetcher(timeout=0.5), url=f"http://127.0.0.2:{public_port}/slow")
    finally:
        Public.release.set()
    assert refused(result, "timed out")


@pytest.mark.parametrize("path", ["/drip-body", "/drip-headers"])
def test_a_drip_fed_answer_cannot_hold_the_call_past_its_timeout(
    public_port: int, path: str
) -> None:
    Public.release.clear()
    started = time.monotonic()
    try:
        result = call(fetcher(timeout=1.0), url=f"http://127.0.0.2:{public_port}{path}")
    finally:
        Public.release.set()
    assert refused(result, "timed out")
    assert time.monotonic() - started < 20  # the drip goes on for 60 s: bounded, with slack


def test_by_default_even_the_test_server_is_internal(public_port: int) -> None:
    plain = HttpFetch(allow=["127.0.0.2"])
    assert refused(call(plain, url=f"http://127.0.0.2:{public_port}/page"), "internal address")


def test_an_allow_list_is_required() -> None:
    for allow in ([], "example.org", None):
        with pytest.raises(ConfigurationError, match="allow must be a non-empty list"):
            HttpFetch(allow=allow)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.216.34", True),
        ("2606:2800:220:1:248:1893:25c8:1946", True),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.0.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("255.255.255.255", False),
        ("::1", False),
        ("fe80::1", False),
        ("fec0::1", False),  # IPv6 site-local
        ("fc00::1", False),
        ("::ffff:127.0.0.1", False),
        ("::ffff:10.0.0.1", False),
        ("2002:7f00:1::", False),  # 6to4 wrapping 127.0.0.1
    ],
)
def test_which_addresses_count_as_public(address: str, public: bool) -> None:
    assert is_public(ipaddress.ip_address(address)) is public


def test_a_hostile_html_page_is_converted_within_the_call_s_bound(public_port: int) -> None:
    outcome: list[ToolResult] = []
    worker = threading.Thread(
        target=lambda: outcome.append(
            call(fetcher(timeout=10), url=f"http://127.0.0.2:{public_port}/hostile-html")
        ),
        daemon=True,
    )
    worker.start()
    worker.join(60)  # a bound on a hang, not a speed target: html.parser took hours
    assert outcome, "HttpFetch still converting a 1 MB page after 60 s"
    assert outcome[0].is_success and outcome[0].output == ""  # one unclosed comment: no text
