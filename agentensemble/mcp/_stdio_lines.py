"""The stdio server's output read in bounded lines: the one adapter to the SDK's stdio reader.

The ``mcp`` SDK's stdio client reads the server's stdout as text chunks and joins each to what
it holds as ``buffer + chunk`` until a newline comes: a line of n bytes costs n²/64 kB of
copying on the event loop (a 20 MB tool result held it 13 s, 100 MB minutes) and is kept whole
however long it grows. A hostile server controls both.

The reader gets its chunks from ``mcp.client.stdio.TextReceiveStream``; this module puts
``LineBoundedText`` in its place. Inside ``reading_lines(bound)`` (entered by
``MCPServerStdio`` around the SDK's ``stdio_client``, so the reader task it starts inherits it),
the stream hands the SDK whole lines only, joined once (linear), and ends the stream when a line
passes ``limit`` characters: the connection closes and ``LineBound.exceeded`` says why.
Elsewhere (another library using the SDK in this process) it is anyio's stream unchanged.
``check_sdk`` verifies at start that the SDK still reads through that name.
"""

from __future__ import annotations

import contextvars
import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from anyio import EndOfStream
from anyio.streams.text import TextReceiveStream

from agentensemble.mcp._connection import MCPServerError

MAX_LINE_CHARS = 64 * 1024 * 1024
"""A message from a stdio server longer than this (64 Mi characters) ends the connection."""


class LineBound:
    """One connection's bound; ``exceeded`` is set when the server passed it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.exceeded = False

    def note(self) -> str | None:
        """Why the connection ended, for its errors (None while it has not)."""
        if not self.exceeded:
            return None
        return (
            f"the server sent a message of over {self.limit} characters; it was not read and "
            "the connection was closed"
        )


_BOUND: contextvars.ContextVar[LineBound | None] = contextvars.ContextVar(
    "agentensemble_mcp_line_bound", default=None
)


class LineBoundedText(TextReceiveStream):
    """anyio's ``TextReceiveStream``; inside ``bounded_lines``, whole lines only, bounded."""

    async def receive(self) -> str:
        bound = _BOUND.get()
        if bound is None:
            return await super().receive()
        if bound.exceeded:  # the rest of the overlong line would read as a new message
            raise EndOfStream
        pending: list[str] = self.__dict__.setdefault("_agentensemble_pending", [])
        size = sum(len(part) for part in pending)
        while True:
            try:
                chunk = await super().receive()
            except EndOfStream:
                if not pending or bound.exceeded:
                    raise
                rest = "".join(pending)
                pending.clear()
                return rest  # the last line, without its newline
            cut = chunk.rfind("\n")
            if cut == -1:
                pending.append(chunk)
                size += len(chunk)
                if size > bound.limit:
                    await self._refuse(bound, pending)
                continue
            if size + chunk.find("\n") > bound.limit:  # the held line ends here, too long
                await self._refuse(bound, pending)
            head = "".join([*pending, chunk[: cut + 1]])
            pending[:] = [chunk[cut + 1 :]] if cut + 1 < len(chunk) else []
            if pending and len(pending[0]) > bound.limit:  # the next line, too long already
                bound.exceeded = True
                pending.clear()
            return head

    async def _refuse(self, bound: LineBound, pending: list[str]) -> NoReturn:
        """End the stream: the server's output is closed (the SDK's reader then drains
        nothing and closes its side, so the session and every waiting call see the end)."""
        bound.exceeded = True
        pending.clear()
        await self.transport_stream.aclose()
        raise EndOfStream


def check_sdk() -> None:
    """Put ``LineBoundedText`` where the SDK's stdio reader finds its stream class; refuse to
    start (naming what changed) if the SDK no longer reads through that name."""
    import mcp.client.stdio as sdk

    found = getattr(sdk, "TextReceiveStream", None)
    if found is LineBoundedText:
        return
    try:
        source = inspect.getsource(sdk.stdio_client)
    except (OSError, TypeError):  # installed without sources: the name alone is checked
        source = "TextReceiveStream("
    if found is not TextReceiveStream or "TextReceiveStream(" not in source:
        raise MCPServerError(
            "this mcp version's stdio client no longer reads through TextReceiveStream, so its "
            "server output cannot be bounded (agentensemble/mcp/_stdio_lines.py): "
            'install the pinned range, pip install "mcp>=2.3,<3"'
        )
    setattr(sdk, "TextReceiveStream", LineBoundedText)  # noqa: B010  (the SDK's own name)


@contextmanager
def reading_lines(bound: LineBound) -> Iterator[LineBound]:
    """Within the block, stdio streams the SDK opens hand it lines of at most ``bound.limit``
    characters (a task started inside inherits it: the SDK's reader)."""
    check_sdk()
    token = _BOUND.set(bound)
    try:
        yield bound
    finally:
        _BOUND.reset(token)


__all__ = ["MAX_LINE_CHARS", "LineBound", "LineBoundedText", "check_sdk", "reading_lines"]
