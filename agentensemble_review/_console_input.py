"""Console input that answers only the review on screen: nothing typed before it is shown.

A console review reads lines in a background thread (so each wait can time out). The danger is
a line meant for one review answering another: an answer typed just after a review timed out
(``x``, then Enter for the reason) must not approve the next one. ``ReviewInput`` prevents it:

- Every review is an epoch. A line is handed only to the review whose epoch was showing when the
  read started *and* when it finished; a line read for a review that has ended, or read while no
  review was showing, is dropped and counted.
- On a terminal every review starts clean: after the banner is written, pending input is flushed
  (``termios.tcflush``) and every buffered line is dropped. Only what is typed after the banner
  appeared can answer it.
- On a pipe or a file, answers given in advance for a sequence of reviews still work, in order,
  as long as input and reviews stay in step. A review that ends without an answer (timeout, end
  of input, too many unknown answers) puts the input out of step: the next review then drops
  every buffered line and drains the pipe of whatever was written before its banner.

Streams with a file descriptor that ``select`` supports are read from the descriptor directly
(bypassing Python's buffer, whose contents were typed before any review anyway); other streams
(``io.StringIO``, test doubles, Windows pipes) through ``readline``.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import select
import threading
import time
import weakref
from collections import deque
from typing import Any, TextIO

_POLL_SECONDS = 0.05
_MAX_DRAIN_READS = 1024
_READ_SIZE = 65536


class _Timeout:
    """Sentinel: no line arrived in time."""


TIMED_OUT = _Timeout()


def _selectable_fd(stream: object) -> int | None:
    """The stream's file descriptor if ``select`` works on it here, else None."""
    try:
        fd = int(stream.fileno())  # type: ignore[attr-defined]
        select.select([fd], [], [], 0)
    except (AttributeError, OSError, ValueError, TypeError):
        return None
    return fd


def _decoder_for(stream: object) -> codecs.IncrementalDecoder:
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        factory = codecs.getincrementaldecoder(encoding)
    except LookupError:
        factory = codecs.getincrementaldecoder("utf-8")
    return factory(errors="replace")


def _flush_terminal_input(fd: int) -> None:
    """Discard what was typed on the terminal ``fd`` but not read yet (POSIX only)."""
    try:
        import termios
    except ImportError:  # Windows: no termios; the console there reads through readline
        return
    with contextlib.suppress(OSError):
        termios.tcflush(fd, termios.TCIFLUSH)


class ReviewInput:
    """The lines of one input stream, handed out review by review (see the module docstring).

    Use: ``begin()`` before writing the banner, ``show()`` once it is written, ``readline``
    while the review waits for an answer, ``end(answered)`` when it is decided.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._fd = _selectable_fd(stream)
        self._tty = self._fd is not None and os.isatty(self._fd)
        self._decoder = _decoder_for(stream)
        self._cond = threading.Condition()
        self._epoch = 0
        self._active: int | None = None
        self._lines: deque[str] = deque()
        self._partial = ""
        self._eof = False
        self._reading = False
        self._waiters = 0
        self._out_of_step = False
        self._ignored = 0

    @property
    def is_terminal(self) -> bool:
        return self._tty

    # -- the review's side ---------------------------------------------------------------------

    def begin(self) -> None:
        """A new review is about to be shown: no line read so far may answer it unless the
        input is a pipe still in step with the reviews."""
        with self._cond:
            self._epoch += 1
            self._active = None
            if self._tty:
                self._eof = False  # Ctrl-D answered an earlier review, not this one
            if self._tty or self._out_of_step:
                self._ignored += self._drop_buffered()
            if self._fd is not None:  # let a polling reader notice it is not wanted any more
                self._cond.wait_for(lambda: not self._reading, timeout=5.0)

    def show(self) -> int:
        """The banner is on screen: discard input typed before it, then start taking answers.

        Returns how many lines typed before this review were ignored since the last one.
        """
        with self._cond:
            if self._tty and self._fd is not None:
                _flush_terminal_input(self._fd)
            elif self._out_of_step and self._fd is not None and not self._reading:
                self._ignored += self._drain_pipe()
            self._out_of_step = False
            self._active = self._epoch
            ignored, self._ignored = self._ignored, 0
            return ignored

    def end(self, *, answered: bool) -> None:
        """The review is over; without an answer from this input, the input is out of step."""
        with self._cond:
            self._active = None
            if not answered:
                self._out_of_step = True
            self._cond.notify_all()

    def readline(self, timeout: float | None) -> str | _Timeout:
        """The next line for the review on screen (``""`` at end of input), or ``TIMED_OUT``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._waiters += 1
            try:
                while not self._lines and not self._eof:  # bounded by the deadline
                    self._start_reader()
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return TIMED_OUT
                    self._cond.wait(remaining)
                return self._lines.popleft() if self._lines else ""
            finally:
                self._waiters -= 1

    # -- buffers -------------------------------------------------------------------------------

    def _drop_buffered(self) -> int:
        dropped = len(self._lines) + (1 if self._partial else 0)
        self._lines.clear()
        self._partial = ""
        return dropped

    def _drain_pipe(self) -> int:
        """Read and drop whatever is already in the pipe (written before the banner)."""
        assert self._fd is not None
        dropped = ""
        for _ in range(_MAX_DRAIN_READS):  # bounded: a writer that never stops cannot hold us
            try:
                ready, _, _ = select.select([self._fd], [], [], 0)
                if not ready:
                    break
                data = os.read(self._fd, _READ_SIZE)
            except (OSError, ValueError):
                data = b""
            if not data:
                self._eof = True
                break
            dropped += self._decoder.decode(data)
        return dropped.count("\n") + (1 if dropped and not dropped.endswith("\n") else 0)

    def _take(self, text: str) -> None:
        """Add text read for the review on screen; ``""`` is end of input."""
        if not text:
            if self._partial:
                self._lines.append(self._partial)
                self._partial = ""
            self._eof = True
            return
        *complete, self._partial = (self._partial + text).split("\n")
        self._lines.extend(line + "\n" for line in complete)

    # -- the reader thread ---------------------------------------------------------------------

    def _wanted(self) -> bool:
        return self._active is not None and self._waiters > 0 and not self._lines and not self._eof

    def _start_reader(self) -> None:
        if not self._reading and self._wanted():
            self._reading = True
            threading.Thread(
                target=self._run, name="agentensemble-console-reader", daemon=True
            ).start()

    def _run(self) -> None:
        while True:  # ends when no review waits for a line
            with self._cond:
                if not self._wanted():
                    self._reading = False
                    self._cond.notify_all()
                    return
                epoch = self._active
            text = self._read_some()
            with self._cond:
                if text is None:
                    continue
                if self._active != epoch:  # read for a review that ended: answers nothing
                    stale = self._partial + text
                    self._partial = ""
                    if stale:
                        self._ignored += stale.count("\n") + (not stale.endswith("\n"))
                    self._out_of_step = True
                    if not text and not self._tty:
                        self._eof = True
                    continue
                self._take(text)
                self._cond.notify_all()

    def _read_some(self) -> str | None:
        """Some text (``""`` at end of input), or None when nothing came within a poll."""
        if self._fd is None:
            try:
                return self._stream.readline()
            except (OSError, ValueError):  # closed or broken stream: same as end of input
                return ""
        try:
            ready, _, _ = select.select([self._fd], [], [], _POLL_SECONDS)
            if not ready:
                return None
            data = os.read(self._fd, _READ_SIZE)
        except (OSError, ValueError):
            return ""
        return self._decoder.decode(data, final=not data) if data else ""


_INPUTS: weakref.WeakKeyDictionary[Any, ReviewInput] = weakref.WeakKeyDictionary()
_STRONG_INPUTS: dict[int, tuple[Any, ReviewInput]] = {}
_INPUTS_LOCK = threading.Lock()


def review_input_for(stream: TextIO) -> ReviewInput:
    """The one ``ReviewInput`` of ``stream`` (one reader per stream, shared by all reviews)."""
    with _INPUTS_LOCK:
        try:
            found = _INPUTS.get(stream)
            if found is None:
                found = _INPUTS[stream] = ReviewInput(stream)
            return found
        except TypeError:  # not weak-referenceable: keep it alive with its input
            entry = _STRONG_INPUTS.get(id(stream))
            if entry is None:
                entry = _STRONG_INPUTS[id(stream)] = (stream, ReviewInput(stream))
            return entry[1]


__all__ = ["TIMED_OUT", "ReviewInput", "review_input_for"]
