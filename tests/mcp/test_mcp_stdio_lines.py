"""A stdio server's output is read in bounded lines: the SDK's reader joined a long line chunk
by chunk (quadratic, on the event loop: a 20 MB tool result held it 13 s) and kept it whole
however long it grew. The server is real, in its own process."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from anyio.streams.text import TextReceiveStream

from agentensemble.errors import ToolExecutionError
from agentensemble.mcp import MCPServerStdio, _stdio_lines
from agentensemble.mcp._stdio_lines import LineBound, LineBoundedText, reading_lines

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).with_name("mcp_hostile_listing_server.py")


async def received(chunks: list[bytes], limit: int | None) -> tuple[list[str], LineBound | None]:
    """What ``LineBoundedText`` hands the SDK for ``chunks`` (within a bound, or outside)."""
    send, receive = anyio.create_memory_object_stream[bytes](len(chunks))
    for chunk in chunks:
        send.send_nowait(chunk)
    send.close()
    stream = LineBoundedText(receive)  # type: ignore[arg-type]
    got: list[str] = []
    bound = None if limit is None else LineBound(limit)

    async def read_all() -> None:
        async for text in stream:
            got.append(text)

    if bound is None:
        await read_all()
    else:
        with reading_lines(bound):
            await read_all()
    return got, bound


async def test_the_sdk_gets_whole_lines_so_it_never_joins_a_long_one_chunk_by_chunk() -> None:
    chunks = [b"a" * 10, b"b" * 10, b"c\nd", b"d\ne" * 3, b"f" * 5, b"g\n", b"tail"]
    got, bound = await received(chunks, limit=100)
    assert "".join(got) == b"".join(chunks).decode()
    assert all(text.endswith("\n") for text in got[:-1]) and got[-1] == "tail"
    assert bound is not None and bound.note() is None


async def test_outside_a_bounded_connection_the_stream_is_anyio_s_own() -> None:
    chunks = [b"a" * 10, b"b\nc"]
    got, _ = await received(chunks, limit=None)
    assert got == ["a" * 10, "b\nc"]  # chunk by chunk, as TextReceiveStream gives them


@pytest.mark.parametrize(
    "chunks",
    [[b"x" * 60, b"x" * 60], [b"x" * 60, b"x" * 50 + b"\nmore\n"], [b"ok\n" + b"y" * 130]],
    ids=["never-ends", "ends-past-the-bound", "after-a-good-line"],
)
async def test_a_line_past_the_bound_ends_the_stream_saying_why(chunks: list[bytes]) -> None:
    got, bound = await received(chunks, limit=100)
    assert all(len(text) <= 100 for text in got)
    assert bound is not None and bound.exceeded
    assert "a message of over 100 characters" in (bound.note() or "")


def test_the_sdk_still_reads_through_the_replaced_stream_class() -> None:
    """The adapter's contract with the SDK (checked at every stdio start too)."""
    import mcp.client.stdio as sdk

    _stdio_lines.check_sdk()
    assert sdk.TextReceiveStream is LineBoundedText  # type: ignore[attr-defined]
    assert issubclass(LineBoundedText, TextReceiveStream)


async def test_a_server_message_past_the_bound_closes_the_connection_and_the_call_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_stdio_lines, "MAX_LINE_CHARS", 1_000_000)
    server = MCPServerStdio(sys.executable, [str(SERVER), "huge"], timeout=60)
    connection = await server.open()
    try:
        huge = next(tool for tool in connection.tools if tool.name == "huge")
        fine = await huge.ado_execute({"megabytes": 0.3})  # under the bound: read whole
        assert fine.output.startswith("xxx") and "[output cut at" in fine.output
        with pytest.raises(ToolExecutionError) as caught:
            await huge.ado_execute({"megabytes": 3})
        message = str(caught.value)
        assert "failed to answer the call to 'huge'" in message
        assert "a message of over 1000000 characters; it was not read" in message
    finally:
        await connection.close()
