"""``MCPServerHTTP(auth=...)``: a bearer token or any ``httpx2.Auth``, with every credential the
flow handles registered as a secret.

The ``mcp`` client speaks ``httpx2`` (not ``httpx``), so an auth object is an ``httpx2.Auth``:
the SDK's ``OAuthClientProvider`` (and its client-credentials variants) is one. Whatever auth is
given is wrapped by ``SecretsKept``: the credential of each request it sends (``Authorization``)
and the tokens and client secrets in the responses to the flow's own requests (token endpoint,
client registration) are registered with the redaction policy the moment they pass, so an echo
in an error, a log line, a trace or the model's text shows ``***``.

This module imports ``httpx2``: it is imported only when a server connects.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from typing import Any

import httpx2

from agentensemble.redaction import register_header_secrets, register_secret
from agentensemble.untrusted import UntrustedInputError, parse_json

_SECRET_FIELDS = ("access_token", "refresh_token", "id_token", "client_secret")
_MAX_BODY = 256_000  # a token response is small; a larger body is not read for secrets


class BearerAuth(httpx2.Auth):
    """``Authorization: Bearer <token>`` on every request."""

    def __init__(self, token: str) -> None:
        self._header = f"Bearer {token}"

    def auth_flow(
        self, request: httpx2.Request
    ) -> Generator[httpx2.Request, httpx2.Response, None]:
        request.headers["Authorization"] = self._header
        yield request

    def __repr__(self) -> str:
        return "BearerAuth(***)"


def _register_request(request: httpx2.Request) -> None:
    value = request.headers.get("Authorization")
    if value:
        register_header_secrets({"Authorization": value})


def _register_response(response: httpx2.Response) -> None:
    """The tokens in a token or registration response the flow has already read."""
    try:
        body = response.content  # read by the flow that asked for it; else ResponseNotRead
    except httpx2.ResponseNotRead:
        return
    if not body or len(body) > _MAX_BODY or b"{" not in body[:16]:
        return
    try:
        data = parse_json(body, what="the authorization server's answer", max_chars=_MAX_BODY)
    except UntrustedInputError:
        return
    if isinstance(data, dict):
        for name in _SECRET_FIELDS:
            value = data.get(name)
            if isinstance(value, str):
                register_secret(value)


class CleartextRefused(httpx2.RequestError):
    """An auth flow's own request would carry credentials over plain http to another host."""


_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")


def _loopback(host: str) -> bool:
    import ipaddress

    if host.lower() in _LOOPBACK_NAMES or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _check_transport(request: httpx2.Request) -> None:
    """The flow's own requests that carry a credential (a client registration, a token request
    with a code, a verifier, a refresh token or a client secret) go over https, or plain http
    to this machine only: the endpoints come from metadata the server hands out."""
    url = request.url
    if request.method != "GET" and url.scheme == "http" and not _loopback(url.host):
        raise CleartextRefused(
            f"refused to send the authorization flow's {request.method} to "
            f"http://{url.host}{url.path} in clear: OAuth endpoints must use https "
            "(the server's metadata names this one)",
            request=request,
        )


class SecretsKept(httpx2.Auth):
    """Runs ``inner``'s flow unchanged, registering each credential that passes through it;
    the flow's own credential-carrying requests must use https (or stay on this machine)."""

    def __init__(self, inner: httpx2.Auth) -> None:
        self.inner = inner
        self.requires_request_body = inner.requires_request_body
        self.requires_response_body = inner.requires_response_body

    def _register_client_secret(self) -> None:
        """The client secret an OAuth provider holds (given, or from registration): it is sent
        in a form body or a Basic header, where the header rule alone would not find it."""
        context = getattr(self.inner, "context", None)  # OAuthClientProvider's public state
        client = getattr(context, "client_info", None)
        secret = getattr(client, "client_secret", None)
        if isinstance(secret, str):
            register_secret(secret)

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        self._register_client_secret()
        flow = self.inner.async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                _register_request(outgoing)
                if outgoing is not request:  # the flow's own: its URL came from metadata
                    _check_transport(outgoing)
                response = yield outgoing
                try:
                    following = await flow.asend(response)
                finally:
                    if outgoing is not request:  # the flow's own request: token, registration
                        _register_response(response)
                    self._register_client_secret()
                outgoing = following
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()


class StatusWatch:
    """Remembers the last HTTP status of the MCP endpoint (an ``httpx2`` response hook), so a
    failed handshake or call says "refused our credentials" instead of the SDK's generic
    "Server returned an error response" (the SDK drops the status)."""

    def __init__(self, url: str) -> None:
        self._path = httpx2.URL(url).path or "/"
        self.last: int | None = None
        self.reason = ""

    async def see(self, response: httpx2.Response) -> None:
        if response.request.url.path == self._path:
            self.last = response.status_code
            self.reason = response.reason_phrase

    def refusal(self) -> str | None:
        """The one-line reason when the endpoint last answered 401 or 403, else None."""
        if self.last not in (401, 403):
            return None
        return (
            f"HTTP {self.last} {self.reason}: the server refused our credentials "
            "(missing, wrong or expired: check auth=)"
        )


def http_auth(auth: str | Any | None) -> httpx2.Auth | None:
    """The ``httpx2.Auth`` for a checked ``auth`` setting (see ``check_auth`` in server.py)."""
    if auth is None:
        return None
    inner = BearerAuth(auth) if isinstance(auth, str) else auth
    return SecretsKept(inner)


__all__ = ["BearerAuth", "CleartextRefused", "SecretsKept", "StatusWatch", "http_auth"]
