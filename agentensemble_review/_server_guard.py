"""Who may talk to the reference review server: the checks behind each of its answers.

The server decides whether an agent's action runs, so any web page the reviewer has open must not
be able to decide for them. Checked on every request:

- ``Host`` must name this server: a loopback address, ``localhost``, the bound host or one of the
  ``allowed_hosts`` (DNS rebinding gives a foreign name: 403).
- State changes (POST) carrying an ``Origin`` must come from this server's own origin, and a
  ``Sec-Fetch-Site`` other than ``same-origin``/``none`` is refused (403); their body must be
  ``application/json`` (415), which a foreign page cannot send without a CORS preflight this
  server never grants.
- Listing reviews, the page and deciding need the server's token (401): ``?token=`` in the URL,
  or ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import hmac
import ipaddress
import urllib.parse
from collections.abc import Iterable, Mapping

from agentensemble.serve._hardened import same_site

SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _host_part(value: str) -> str | None:
    """The host of a ``Host`` header value (``name``, ``name:port``, ``[v6]:port``)."""
    value = value.strip().lower()
    if not value or any(c in value for c in "/\\@ "):
        return None
    if value.startswith("["):
        end = value.find("]")
        return value[1:end] if end > 0 else None
    host, _, port = value.partition(":")
    if port and not port.isdigit():
        return None
    return host or None


def is_loopback(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Guard:
    """The checks for one server: its bound host and port, its token and extra host names."""

    def __init__(self, host: str, port: int, token: str, allowed_hosts: Iterable[str]) -> None:
        self.port = port
        self.token = token
        self._names = {host.lower().strip("[]"), *(h.lower() for h in allowed_hosts)}

    def host_allowed(self, header: str | None) -> bool:
        host = _host_part(header or "")
        return host is not None and (is_loopback(host) or host in self._names)

    def origin_allowed(self, headers: Mapping[str, str]) -> bool:
        """No ``Origin`` (not a browser) or this server's own origin; never a cross-site fetch.
        ``headers`` has lower-case names (see ``lower_headers``). The hardened setup's rule."""
        return same_site(headers, self.port, self.host_allowed)

    def token_given(self, path: str, headers: Mapping[str, str]) -> bool:
        """Whether the request carries the token (query ``token`` or a Bearer header)."""
        offered: list[str] = []
        query = urllib.parse.urlsplit(path).query
        offered += urllib.parse.parse_qs(query).get("token", [])
        auth = headers.get("authorization", "")
        scheme, _, credential = auth.strip().partition(" ")
        if scheme.lower() == "bearer":
            offered.append(credential.strip())
        expected = self.token.encode()
        return any(hmac.compare_digest(expected, given.encode()) for given in offered)


def lower_headers(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Header names in lower case (the first of repeated headers wins)."""
    headers: dict[str, str] = {}
    for name, value in items:
        headers.setdefault(name.lower(), value)
    return headers


def is_json(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` is JSON (``application/json``, any parameters)."""
    return (content_type or "").split(";")[0].strip().lower() == "application/json"


__all__ = ["SECURITY_HEADERS", "Guard", "is_json", "is_loopback", "lower_headers"]
