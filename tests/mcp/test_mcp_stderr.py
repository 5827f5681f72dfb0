"""A server's stderr: kept in bounded memory, never on disk, and still quoted when it fails.

A hostile or chatty server may write without end to its stderr. These run the real test server
(``mcp_test_server.py noisy MB``) writing megabytes before it serves.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import SERVER

from agentensemble import Agent, Ensemble, Task
from agentensemble.mcp import MCPServerError, MCPServerStdio
from agentensemble.mcp._stderr import HEAD_BYTES, TAIL_BYTES, StderrCapture
from agentensemble.testing import FunctionChatModel, ScriptedChatModel, tool_call

pytestmark = pytest.mark.anyio

NOISE_MB = 8


def bytes_in_open_files() -> int:
    """Disk space held by the regular files this process has open (deleted ones included)."""
    total = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            info = os.stat(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if (info.st_mode & 0o170000) == 0o100000:
            total += info.st_blocks * 512
    return total


def one_task(server: MCPServerStdio, model: Any) -> Ensemble:
    agent = Agent(role="Listener", goal="Use the tools", tools=[server], llm=model)
    return Ensemble(tasks=[Task(description="Listen", agent=agent)])


async def test_megabytes_of_stderr_take_no_disk_and_the_note_still_shows_the_tail() -> None:
    before = bytes_in_open_files()
    held_during_the_run: list[int] = []

    def model(messages: list[dict[str, Any]], tools: Any) -> Any:
        if messages[-1].get("role") != "tool":
            # the server wrote all its noise before answering the handshake: it went somewhere
            held_during_the_run.append(bytes_in_open_files() - before)
            return tool_call("die")
        return "it died"

    recorder = FunctionChatModel(model)
    server = MCPServerStdio(sys.executable, [str(SERVER), "noisy", str(NOISE_MB)])
    output = await one_task(server, recorder).arun()

    assert held_during_the_run and held_during_the_run[0] < 1_000_000, held_during_the_run
    (died,) = [m["content"] for m in recorder.requests[1].messages if m.get("role") == "tool"]
    assert "failed to answer the call to 'die'" in died
    assert died.rstrip().endswith("test server: dying on request")  # the tail
    assert "test server: noisy start" in died  # and the beginning
    assert "bytes not kept" in died
    assert len(died) < HEAD_BYTES + TAIL_BYTES + 500
    assert output.raw == "it died"


async def test_a_noisy_server_that_fails_to_start_is_quoted_from_both_ends() -> None:
    server = MCPServerStdio(sys.executable, [str(SERVER), "noisy", "2", "crash"])
    with pytest.raises(MCPServerError) as caught:
        await one_task(server, ScriptedChatModel(["never"])).arun()
    message = str(caught.value)
    assert "could not start" in message
    assert "test server: noisy start" in message
    assert message.rstrip().endswith("test server: the noise is over")


def test_the_capture_keeps_the_first_and_last_bytes_and_counts_the_rest() -> None:
    capture = StderrCapture("a test")
    try:
        capture.writer.write(b"first line\n" + b"x" * 5_000_000 + b"\nlast line\n")
        note = capture.note()
        assert capture.total == 5_000_022
        assert capture.kept == HEAD_BYTES + TAIL_BYTES
        assert note.startswith(". Its stderr (5000022 bytes) began with:\nfirst line\nxxx")
        assert f"[{5_000_022 - HEAD_BYTES - TAIL_BYTES} bytes not kept]" in note
        assert note.endswith("xxx\nlast line")
    finally:
        capture.close()


@pytest.mark.parametrize(
    ("written", "note"),
    [
        (b"", ""),
        (b"  \n", ""),
        (b"short failure\n", ". Its stderr ends with:\nshort failure"),
        (b"a" * 2_500, ". Its stderr ends with:\n" + "a" * 2_500),  # head and tail meet
        (b"\xff\xfebad utf-8", ". Its stderr ends with:\n\ufffd\ufffdbad utf-8"),
    ],
)
def test_a_short_stderr_is_quoted_whole(written: bytes, note: str) -> None:
    capture = StderrCapture("a test")
    try:
        capture.writer.write(written)
        assert capture.note() == note
    finally:
        capture.close()


def test_closing_ends_the_draining_thread_and_frees_the_pipe(tmp_path: Path) -> None:
    fds_before = set(os.listdir("/proc/self/fd"))
    capture = StderrCapture("a test")
    capture.writer.write(b"bye")
    capture.close()
    capture._thread.join(timeout=30)
    assert not capture._thread.is_alive()
    assert set(os.listdir("/proc/self/fd")) <= fds_before
