"""The process group of a stdio MCP server, ended with the session whatever its leader did.

The ``mcp`` client starts a server in a new session (its own process group) and kills that group
only when the leader does not exit within its grace period. A leader that exits politely on
end of input leaves its children (a shell's pipeline, a node server's workers) running after the
run. We find the leader once it is started (our child, leader of its own session, whose stderr
is the file we gave it) and signal its whole group when the session ends: SIGTERM, a short
wait, then SIGKILL. Linux reads ``/proc``; elsewhere nothing is found and the ``mcp`` client's
own escalation is all there is.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import IO, Any

GRACE_SECONDS = 2.0
_POLL = 0.05


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = open(f"/proc/{pid}/stat").read()  # noqa: SIM115 (one small read)
    except OSError:
        return None
    # "pid (comm) state ppid pgrp session ..." and comm may hold spaces or parentheses
    return text[text.rfind(")") + 2 :].split()


def find_leader(stderr: IO[Any]) -> int | None:
    """The pid of our child that leads its own session and writes to ``stderr``, or None."""
    try:
        wanted = os.fstat(stderr.fileno())
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except (OSError, ValueError, AttributeError):
        return None
    me = os.getpid()
    for pid in pids:
        fields = _stat_fields(pid)
        if not fields or len(fields) < 4 or int(fields[1]) != me or int(fields[3]) != pid:
            continue
        try:
            theirs = os.stat(f"/proc/{pid}/fd/2")
        except OSError:
            continue
        if (theirs.st_dev, theirs.st_ino) == (wanted.st_dev, wanted.st_ino):
            return pid
    return None


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def end_group(pgid: int | None, grace: float = GRACE_SECONDS) -> None:
    """SIGTERM the group, wait up to ``grace`` seconds for it to go, then SIGKILL what is left.
    Blocking (bounded): call it in a worker thread from async code."""
    if pgid is None:
        return
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return
        time.sleep(_POLL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


__all__ = ["GRACE_SECONDS", "end_group", "find_leader"]
