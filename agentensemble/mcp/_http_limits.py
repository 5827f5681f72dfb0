"""Answers of an HTTP MCP server read to a bound: a server's JSON answer is read whole by the
SDK (``response.aread()``), however large it says or turns out to be.

``MCPServerHTTP`` gives its ``httpx2`` client ``BoundedTransport``: every answer but an event
stream (the SDK bounds each event itself, and the stream lives as long as the session) is read
to at most ``MAX_RESPONSE_BYTES``; past it the read fails with ``ResponseTooLarge``, which the
SDK turns into the failure of that one request (its text names the bound).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2

MAX_RESPONSE_BYTES = 64 * 1024 * 1024
"""An HTTP MCP server's answer longer than this (64 MiB) is not read: its request fails."""


class ResponseTooLarge(httpx2.StreamError):
    """The server's answer passed the bound; the request it answers fails."""


class _Bounded(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise ResponseTooLarge(
                    f"the server's answer is over {self._limit} bytes; it was not read"
                )
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class BoundedTransport(httpx2.AsyncBaseTransport):
    """``inner`` (the default transport), with each answer but an event stream bounded."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        kind = response.headers.get("content-type", "").lower()
        if not kind.startswith("text/event-stream"):
            response.stream = _Bounded(response.stream, self._limit)  # type: ignore[arg-type]
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def bounded_transport() -> BoundedTransport:
    """The default ``httpx2`` transport, its answers bounded at ``MAX_RESPONSE_BYTES``."""
    return BoundedTransport(httpx2.AsyncHTTPTransport(), MAX_RESPONSE_BYTES)


__all__ = ["MAX_RESPONSE_BYTES", "BoundedTransport", "ResponseTooLarge", "bounded_transport"]
