"""Every response body a model call reads is bounded while it arrives, by its decoded size,
and no redirect is followed: on the openai lane and on litellm's async clients.

A model endpoint the user does not control (a local server, a gateway, a proxy) may answer with
hundreds of megabytes, or with a small ``Content-Encoding: gzip`` body that inflates to
gigabytes. httpx (and the ``openai`` package, which reads an error's body whole before raising)
would hold all of it. ``bound_bodies`` is an httpx response hook: it runs before any body is
read and wraps the response's byte stream so that reading it raises ``UntrustedInputError`` as
soon as the body passes its bound, counted as decoded (gzip and deflate bodies are inflated in
steps to count them, ``_base/decoded_size.py``, before httpx decodes the same bytes). An
answer, an error body and a stream each have their bound; a stream's words are bounded again
by ``StreamAssembler`` and its time by ``StreamDeadline``, and a stream's lines (uncompressed)
by ``MAX_STREAM_LINE_BYTES``. Imported when a client is made
(httpx is loaded by then). ``bounding_bodies(source)`` is the same hook for another remote
whose answers are read by a library (the A2A client, ``serve/a2a_remote.py``), its errors
naming that remote. A coding it cannot inflate (``br``, ``zstd``, stacked codings) is
bounded by its bytes as received.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx

from agentensemble._base.decoded_size import DecodedSize
from agentensemble.errors import UntrustedInputError
from agentensemble.untrusted import MAX_CHARS

#: A whole answer (or an error body): the untrusted parser's own bound.
MAX_BODY_BYTES = MAX_CHARS
#: A body that is neither JSON, text nor a stream: a file litellm's own async client downloads
#: for a provider that takes it only inline (an image URL for Anthropic or Bedrock), up to our
#: 20 MiB attachment bound and litellm's own 50 MB image cap; still bounded, far below a bomb.
MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024
#: A stream (``text/event-stream``): its SSE framing costs many times its words, which
#: ``StreamAssembler`` bounds at ``MAX_CHARS``.
MAX_STREAM_BODY_BYTES = 16 * MAX_CHARS
#: The longest line of a stream (an SSE event's data is one line): the ``openai`` package
#: gathers a line by adding each piece to the bytes so far, so its work grows with the square of
#: the line's length; a line never ended would otherwise burn the event loop until the stream's
#: idle deadline.
MAX_STREAM_LINE_BYTES = MAX_CHARS


class BoundedBody(httpx.AsyncByteStream):
    """An httpx async byte stream that raises once the body it passes on is over ``limit``
    bytes, decoded; wraps the transport's stream, so it counts before httpx decodes. Its errors
    name ``source`` (whose answer it is)."""

    def __init__(
        self,
        stream: Any,
        limit: int,
        coding: str,
        line_limit: int | None = None,
        source: str = "the model server",
    ) -> None:
        self._stream = stream
        self._source = source
        self._limit = limit
        self._size = 0
        self._line_limit = line_limit if not coding or coding == "identity" else None
        self._line = 0  # bytes since the last line end
        self._decoded = DecodedSize(coding, limit)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            self._count(chunk)
            if self._line_limit is not None:
                self._count_line(chunk, self._line_limit)
            yield chunk

    def _count_line(self, chunk: bytes, limit: int) -> None:
        end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
        self._line = self._line + len(chunk) if end < 0 else len(chunk) - end - 1
        if self._line > limit:
            raise UntrustedInputError(
                f"{self._source}'s stream",
                f"not usable (a line of over {limit} bytes; at most {limit})",
            )

    def _count(self, chunk: bytes) -> None:
        self._size = self._decoded.add(chunk)
        if self._size > self._limit:
            raise UntrustedInputError(
                f"{self._source}'s answer",
                f"too large (over {self._limit} bytes; at most {self._limit} are read)",
            )

    async def aclose(self) -> None:
        await self._stream.aclose()


async def bound_bodies(response: Any) -> None:
    """The httpx response hook: the body of ``response`` bounded as the module doc says, and a
    redirect never followed (its ``Location`` dropped, so the caller gets the 3xx as an error):
    it would carry the key, extra headers and the prompt to wherever it points."""
    _bound(response, "the model server")


def bounding_bodies(source: str) -> Callable[[Any], Awaitable[None]]:
    """``bound_bodies`` for the answers of ``source`` (``"the remote agent"``): the hook to give
    an httpx client whose answers another library reads whole."""

    async def hook(response: Any) -> None:
        _bound(response, source)

    return hook


def _bound(response: Any, source: str) -> None:
    if response.is_redirect:
        del response.headers["location"]
    coding = response.headers.get("content-encoding", "").strip().lower()
    kind = response.headers.get("content-type", "").strip().lower()
    if kind.startswith("text/event-stream"):
        stream = BoundedBody(
            response.stream, MAX_STREAM_BODY_BYTES, coding, MAX_STREAM_LINE_BYTES, source
        )
    elif not kind or kind.startswith(("application/json", "text/")) or "json" in kind:
        stream = BoundedBody(response.stream, MAX_BODY_BYTES, coding, source=source)
    else:  # an image, a PDF... a download (see MAX_DOWNLOAD_BYTES)
        stream = BoundedBody(response.stream, MAX_DOWNLOAD_BYTES, coding, source=source)
    response.stream = stream


def harden_client(client: Any) -> Any:
    """An httpx async client made by litellm, given ``bound_bodies`` as a response hook (litellm
    makes its clients with ``follow_redirects=True`` and no bound); returned for chaining."""
    if isinstance(client, httpx.AsyncClient):
        hooks = client.event_hooks
        if bound_bodies not in hooks.get("response", []):
            client.event_hooks = {**hooks, "response": [*hooks.get("response", []), bound_bodies]}
    return client


__all__ = [
    "MAX_BODY_BYTES",
    "MAX_DOWNLOAD_BYTES",
    "MAX_STREAM_BODY_BYTES",
    "MAX_STREAM_LINE_BYTES",
    "BoundedBody",
    "bound_bodies",
    "bounding_bodies",
    "harden_client",
]
