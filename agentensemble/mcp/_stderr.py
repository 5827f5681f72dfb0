"""An MCP server's stderr, kept in bounded memory for error notes.

A server may write without end (a chatty one, or a hostile one trying to fill the disk). Its
stderr is a pipe that a thread drains as it comes: the first ``HEAD_BYTES`` are kept (where a
startup error usually is) and the last ``TAIL_BYTES`` (where a crash is), the rest is only
counted. Nothing goes to disk, and the server never blocks on a full pipe.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from typing import IO

from agentensemble.redaction import redact_text

HEAD_BYTES = 1_000
TAIL_BYTES = 2_000
_CHUNK = 65_536
_IDLE_CHECK = 0.5  # seconds between looks at "closed" while the server is quiet


class StderrCapture:
    """A pipe whose write end (``writer``) goes to the server as its stderr."""

    def __init__(self, label: str) -> None:
        read_fd, write_fd = os.pipe()  # both non-inheritable: only the server gets a copy
        os.set_blocking(read_fd, False)
        self.writer: IO[bytes] = open(write_fd, "wb", buffering=0)  # noqa: SIM115 (close())
        self._read_fd: int | None = read_fd
        self._lock = threading.Lock()
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        self._closed = threading.Event()
        self._thread = threading.Thread(
            target=self._drain_until_closed, name=f"agentensemble stderr of {label}", daemon=True
        )
        self._thread.start()

    @property
    def kept(self) -> int:
        """Bytes held in memory (at most ``HEAD_BYTES + TAIL_BYTES``)."""
        return len(self._head) + len(self._tail)

    def note(self) -> str:
        """``. Its stderr ends with: ...`` (with its beginning too if much was written), or ""."""
        with self._lock:
            self._drain_available()  # what the server wrote before it failed is in the pipe
            head, tail, total = bytes(self._head), bytes(self._tail), self.total
        if not total:
            return ""
        left_out = total - len(head) - len(tail)
        if not left_out:
            whole = _text(head + tail)
            return f". Its stderr ends with:\n{whole}" if whole else ""
        return (
            f". Its stderr ({total} bytes) began with:\n{_text(head)}\n[{left_out} bytes not "
            f"kept]\nand ends with:\n{_text(tail)}"
        )

    def close(self) -> None:
        """Stop draining; the thread closes the pipe (a server still writing gets EPIPE)."""
        with contextlib.suppress(OSError):
            self.writer.close()
        self._closed.set()

    def _drain_until_closed(self) -> None:
        try:
            read_fd = self._read_fd
            if read_fd is None:
                return
            poller = select.poll()  # not select(): no limit on the descriptor's number
            poller.register(read_fd, select.POLLIN)
            while not self._closed.is_set():
                if poller.poll(_IDLE_CHECK * 1000):
                    with self._lock:
                        if self._drain_available():
                            return  # end of file: every writer is gone
        except (OSError, ValueError):
            return
        finally:
            with self._lock:
                if self._read_fd is not None:
                    os.close(self._read_fd)
                    self._read_fd = None

    def _drain_available(self) -> bool:
        """Read what the pipe holds now (the lock is held); True at end of file."""
        while self._read_fd is not None:
            try:
                chunk = os.read(self._read_fd, _CHUNK)
            except BlockingIOError:
                return False
            except OSError:
                return True
            if not chunk:
                return True
            self._keep(chunk)
        return True

    def _keep(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = HEAD_BYTES - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk[-TAIL_BYTES:]
            del self._tail[:-TAIL_BYTES]


def _text(data: bytes) -> str:
    return redact_text(data.decode("utf-8", errors="replace").strip())


__all__ = ["HEAD_BYTES", "TAIL_BYTES", "StderrCapture"]
