"""HttpFetch: GET a web page from an allow-listed host, safe against SSRF.

Every hop (the first request and each redirect) is checked: http or https only, no user:password
in the URL, the host on the allow-list, and every address the host resolves to public — no
private, loopback, link-local, multicast, reserved or unspecified address (IPv4-mapped IPv6
included). The connection then goes to the very address that was checked, so a DNS answer that
changes between check and connect (rebinding) cannot slip through. Time and size are bounded;
HTML comes back as text.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Sequence
from typing import Annotated
from urllib.parse import urljoin, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from agentensemble.errors import ConfigurationError
from agentensemble.tools.builtin._base import BuiltinTool, refuse
from agentensemble.tools.builtin._html import ConversionTimeout, html_to_text

DEFAULT_TIMEOUT = 15.0
DEFAULT_MAX_BYTES = 1_000_000
MAX_REDIRECTS = 5
_REDIRECTS = {301, 302, 303, 307, 308}
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml", "+json", "+xml")
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class HttpGetInput(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a POST asked of a GET-only tool is refused

    url: Annotated[str, Field(description="The http(s) URL to fetch")]


class HttpFetchInput(HttpGetInput):
    method: Annotated[str, Field(description="HTTP method; GET unless the tool allows more")] = (
        "GET"
    )
    body: Annotated[str | None, Field(description="Request body (only for methods with one)")] = (
        None
    )


def _host_allowed(host: str, allow: Sequence[str]) -> bool:
    """Exact host names, or ``*.example.org`` for its subdomains (not example.org itself)."""
    for pattern in allow:
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]):
                return True
        elif host == pattern:
            return True
    return False


def _cut(connection: http.client.HTTPConnection) -> None:
    """Shut the connection's socket down: the fetch's deadline has passed."""
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def is_public(address: IPAddress) -> bool:
    """Whether an address is safe to connect to from a server: globally routable unicast."""
    if isinstance(address, ipaddress.IPv6Address):
        mapped = address.ipv4_mapped or address.sixtofour
        if mapped is not None:
            return is_public(mapped)
        if address.is_site_local:  # fec0::/10: deprecated, still routed inside some networks
            return False
    return address.is_global and not (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    )


class HttpFetch(BuiltinTool[HttpGetInput]):
    """Fetch a URL from an allow-listed host (GET by default) and return its text."""

    default_name = "http_fetch"
    own_deadline = True  # its ``timeout`` is enforced inside: the policy's is a backstop

    def __init__(
        self,
        allow: Sequence[str],
        *,
        methods: Sequence[str] = ("GET",),
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        requires_approval: bool = False,
        name: str | None = None,
    ) -> None:
        self._init_name(name)
        if isinstance(allow, str) or not allow or not all(isinstance(h, str) for h in allow):
            raise ConfigurationError(
                "HttpFetch: allow must be a non-empty list of host names, e.g. ['example.org']"
            )
        self.allow = tuple(host.strip().lower().rstrip(".") for host in allow)
        self.methods = tuple(method.upper() for method in methods)
        self.timeout: float = timeout
        self.max_bytes = max_bytes
        self.requires_approval = requires_approval
        self._permit_addresses: frozenset[IPAddress] = frozenset()  # tests only: never public
        if self.methods != ("GET",):  # the model sees method and body only when they can vary
            self.input_model = HttpFetchInput
        self.description = (
            f"Fetch a web page or API over http(s) ({', '.join(self.methods)}) and return its "
            f"text. Allowed hosts: {', '.join(self.allow)}."
        )

    def do_execute(self, input: HttpGetInput) -> str:
        method = getattr(input, "method", "GET").upper()
        if method not in self.methods:
            refuse(f"method {method} is not allowed; allowed: {', '.join(self.methods)}")
        deadline = time.monotonic() + self.timeout
        url = input.url.strip()
        body = getattr(input, "body", None) if method not in ("GET", "HEAD") else None
        for _ in range(MAX_REDIRECTS + 1):
            status, reason, headers, data, truncated = self._request(method, url, body, deadline)
            location = headers.get("location")
            if status in _REDIRECTS and location:
                url = urljoin(url, location)
                if status == 303 or (status in (301, 302) and method != "HEAD"):
                    method, body = "GET", None
                continue
            return self._render(url, status, reason, headers, data, truncated, deadline)
        refuse(f"too many redirects (more than {MAX_REDIRECTS})")

    # -- one hop --------------------------------------------------------------------------

    def _check(self, url: str) -> tuple[str, str, int, IPAddress, str]:
        """Scheme, host, port, a checked address and the path; refusal if any is not allowed."""
        if any(ch.isspace() or ord(ch) < 32 for ch in url):
            refuse("the URL contains whitespace or control characters")
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as error:
            refuse(f"not a valid URL: {error}")
        if parts.scheme not in ("http", "https"):
            refuse(f"only http and https URLs are allowed, got {parts.scheme or 'none'!r}")
        if parts.username is not None or parts.password is not None:
            refuse("URLs with a user name or password are not allowed")
        host = (parts.hostname or "").rstrip(".")
        if not host:
            refuse(f"the URL {url!r} has no host")
        if not _host_allowed(host, self.allow):
            refuse(f"host {host!r} is not on this tool's allow-list ({', '.join(self.allow)})")
        port = port or (443 if parts.scheme == "https" else 80)
        address = self._resolve(host, port)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return parts.scheme, host, port, address, path

    def _resolve(self, host: str, port: int) -> IPAddress:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as error:
            refuse(f"cannot resolve host {host!r}: {error}")
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
        blocked = [a for a in addresses if not is_public(a) and a not in self._permit_addresses]
        if blocked or not addresses:
            refuse(
                f"host {host!r} resolves to a private, loopback or otherwise internal address "
                f"({blocked[0] if blocked else 'none'}); only public addresses may be fetched"
            )
        return addresses[0]

    def _request(
        self, method: str, url: str, body: str | None, deadline: float
    ) -> tuple[int, str, dict[str, str], bytes, bool]:
        scheme, host, port, address, path = self._check(url)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            refuse(f"timed out after {self.timeout:g} s")
        connection = _pinned_connection(scheme, host, port, address, remaining)
        # the whole exchange is bounded, not each read: a server dripping a byte per second
        # would otherwise hold the call open as long as it likes
        watchdog = threading.Timer(remaining, _cut, (connection,))
        watchdog.daemon = True
        watchdog.start()
        try:
            shown_host = f"[{host}]" if ":" in host else host  # an IPv6 literal
            default_port = 443 if scheme == "https" else 80
            headers = {"Host": shown_host if port == default_port else f"{shown_host}:{port}"}
            headers["User-Agent"] = "agentensemble-http-fetch"
            headers["Accept-Encoding"] = "identity"
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            data = b""
            while len(data) <= self.max_bytes:
                if time.monotonic() > deadline:
                    refuse(f"timed out after {self.timeout:g} s while reading the response")
                chunk = response.read1(min(65_536, self.max_bytes + 1 - len(data)))
                if not chunk:
                    break
                data += chunk
            if time.monotonic() > deadline:  # the watchdog cut the connection
                refuse(f"timed out after {self.timeout:g} s while reading the response")
            truncated = len(data) > self.max_bytes
            found = {key.lower(): value for key, value in response.getheaders()}
            return response.status, response.reason, found, data[: self.max_bytes], truncated
        except (OSError, http.client.HTTPException) as error:
            if time.monotonic() > deadline:
                refuse(f"timed out after {self.timeout:g} s")
            refuse(f"request to {host!r} failed: {type(error).__name__}: {error}")
        finally:
            watchdog.cancel()
            connection.close()

    def _render(
        self,
        url: str,
        status: int,
        reason: str,
        headers: dict[str, str],
        data: bytes,
        truncated: bool,
        deadline: float,
    ) -> str:
        content_type = headers.get("content-type", "text/plain")
        mime = content_type.split(";")[0].strip().lower()
        if not any(marker in mime for marker in _TEXT_TYPES):
            refuse(f"{url} returned {mime or 'unknown'} content, which is not text")
        charset = "utf-8"
        for parameter in content_type.split(";")[1:]:
            key, _, value = parameter.partition("=")
            if key.strip().lower() == "charset" and value.strip():
                charset = value.strip().strip('"')
        try:
            text = data.decode(charset, errors="replace")
        except LookupError:
            text = data.decode("utf-8", errors="replace")
        if mime in ("text/html", "application/xhtml+xml"):
            try:  # within the call's timeout, like the fetch itself
                text = html_to_text(text, deadline=deadline)
            except ConversionTimeout:
                refuse(f"timed out after {self.timeout:g} s while converting the page to text")
        note = f"\n[cut at {self.max_bytes} bytes]" if truncated else ""
        if status >= 400:
            refuse(f"{url} answered HTTP {status} {reason}: {text[:2000]}")
        return f"{text}{note}"


class _PinnedHTTPS(http.client.HTTPSConnection):
    """An HTTPS connection to a checked address, verifying the certificate for the host."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        self._tls = ssl.create_default_context()  # ours: http.client keeps its own privately
        super().__init__(host, port, timeout=timeout, context=self._tls)
        self._address = address

    def connect(self) -> None:
        raw = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(raw, server_hostname=self.host)


class _PinnedHTTP(http.client.HTTPConnection):
    """A plain HTTP connection to a checked address."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


def _pinned_connection(
    scheme: str, host: str, port: int, address: IPAddress, timeout: float
) -> http.client.HTTPConnection:
    kind = _PinnedHTTPS if scheme == "https" else _PinnedHTTP
    return kind(host, port, str(address), timeout)


__all__ = ["HttpFetch", "HttpFetchInput", "HttpGetInput", "is_public"]
