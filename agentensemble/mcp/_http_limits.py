"""Answers of an HTTP MCP server read to a bound: a server's JSON answer is read whole by the
SDK (``response.aread()``), however large it says or turns out to be.

``MCPServerHTTP`` gives its ``httpx2`` client the response hook ``bound_answers``: every answer
but an event stream (the SDK bounds each event itself, and the stream lives as long as the
session) is read to at most ``MAX_RESPONSE_BYTES``, counted as decoded (a small gzip body
inflating to gigabytes is cut as it arrives); past it the read fails with ``ResponseTooLarge``,
which the SDK turns into the failure of that one request (its text names the bound). A hook, not
a transport of ours: an ``httpx2`` client given a transport ignores ``HTTPS_PROXY`` and the
other proxy variables of the environment.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2

from agentensemble._base.decoded_size import DecodedSize

MAX_RESPONSE_BYTES = 64 * 1024 * 1024
"""An HTTP MCP server's answer longer than this (64 MiB, decoded) is not read: its request
fails."""


class ResponseTooLarge(httpx2.StreamError):
    """The server's answer passed the bound; the request it answers fails."""


class _Bounded(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, limit: int, coding: str) -> None:
        self._inner = inner
        self._limit = limit
        self._decoded = DecodedSize(coding, limit)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            if self._decoded.add(chunk) > self._limit:
                raise ResponseTooLarge(
                    f"the server's answer is over {self._limit} bytes; it was not read"
                )
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


async def bound_answers(response: httpx2.Response) -> None:
    """The response hook: ``response``'s body, unless an event stream, bounded at
    ``MAX_RESPONSE_BYTES``."""
    kind = response.headers.get("content-type", "").lower()
    if not kind.startswith("text/event-stream"):
        coding = response.headers.get("content-encoding", "")
        response.stream = _Bounded(response.stream, MAX_RESPONSE_BYTES, coding)


__all__ = ["MAX_RESPONSE_BYTES", "ResponseTooLarge", "bound_answers"]
