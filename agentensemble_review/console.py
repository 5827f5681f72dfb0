"""Review on the terminal: show what is at stake, read ``c`` / ``e`` / ``x``, within the timeout.

Answers (case-insensitive, one per line):

- ``c``, ``continue`` or an empty line (Enter): continue.
- ``e`` (or ``edit``): the next line is the replacement text. For several lines, answer that
  prompt with a line of three double quotes (``\"\"\"``), type the lines, and close with another
  ``\"\"\"`` line. An empty line cancels the edit. ``e some text`` edits in one line.
- ``x`` (or ``exit``): exit early (reject the tool call); then an optional reason line.
  ``x some reason`` gives the reason in one line.

No answer before the timeout, end of input (EOF, a closed pipe), a closed output or too many
unknown answers all apply the request's ``on_timeout`` action: a console review never approves
by default. A process-wide lock serialises console reviews, so concurrent ones (parallel tool
calls) never interleave; time spent waiting for that lock counts against the timeout.
"""

from __future__ import annotations

import contextlib
import queue
import re
import sys
import threading
import time
import weakref
from typing import Any, TextIO

from agentensemble_review._asking import apply_on_timeout
from agentensemble_review._format import clock, truncate
from agentensemble_review.models import (
    Continue,
    Edit,
    ExitEarly,
    OnTimeoutAction,
    ReviewDecision,
    ReviewRequest,
    ReviewTiming,
)

CONSOLE_LOCK = threading.Lock()
"""Held for the whole of one console review, in every thread of the process."""

MULTILINE_FENCE = '"""'
_RULE = "=" * 64
_THIN_RULE = "-" * 64


class _Timeout:
    """Sentinel: no line arrived in time."""


_TIMED_OUT = _Timeout()


class _LineReader:
    """Reads one stream a line at a time in a daemon thread, so each wait can time out.

    One reader per stream (see ``_reader_for``): a read left pending by a timed-out review is
    not duplicated, and the line it eventually gets is discarded by the next review as stale.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lines: queue.Queue[str] = queue.Queue()
        self._busy = False
        self._waiters = 0
        self._lock = threading.Lock()

    def discard_stale(self) -> int:
        """Drop lines typed after an earlier review ended; they answer nothing shown now."""
        dropped = 0
        while True:
            try:
                self._lines.get_nowait()
            except queue.Empty:
                return dropped
            dropped += 1

    def readline(self, timeout: float | None) -> str | _Timeout:
        """The next line (``""`` at end of input), or ``_TIMED_OUT`` after ``timeout`` seconds."""
        with self._lock:
            self._waiters += 1
            self._start_read_if_needed()
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            return _TIMED_OUT
        finally:
            with self._lock:
                self._waiters -= 1

    def _start_read_if_needed(self) -> None:
        """Under the lock: one read at a time, and only while someone waits for a line."""
        if not self._busy and self._lines.qsize() < self._waiters:
            self._busy = True
            threading.Thread(
                target=self._read_one, name="agentensemble-console-reader", daemon=True
            ).start()

    def _read_one(self) -> None:
        try:
            line = self._stream.readline()
        except (OSError, ValueError):  # closed or broken stream: same as end of input
            line = ""
        with self._lock:
            self._busy = False
            self._lines.put(line)
            self._start_read_if_needed()


_READERS: weakref.WeakKeyDictionary[Any, _LineReader] = weakref.WeakKeyDictionary()
_STRONG_READERS: dict[int, tuple[Any, _LineReader]] = {}
_READERS_LOCK = threading.Lock()


def _reader_for(stream: TextIO) -> _LineReader:
    with _READERS_LOCK:
        try:
            reader = _READERS.get(stream)
            if reader is None:
                reader = _READERS[stream] = _LineReader(stream)
            return reader
        except TypeError:  # not weak-referenceable: keep it alive with its reader
            entry = _STRONG_READERS.get(id(stream))
            if entry is None:
                entry = _STRONG_READERS[id(stream)] = (stream, _LineReader(stream))
            return entry[1]


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def shown(text: str) -> str:
    """``text`` safe for a terminal: control characters (ANSI escapes, a bare carriage return
    that would overwrite what came before, ...) are printed as visible escapes, so the text under
    review cannot disguise itself or fake the prompt. Newlines and tabs are kept."""
    text = text.replace("\r\n", "\n")
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class _OutputClosed(Exception):
    """The console output cannot be written: nobody can see the review."""


def _is_tty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False


_TIMING_TITLE = {
    ReviewTiming.BEFORE_EXECUTION: "before the task runs",
    ReviewTiming.DURING_EXECUTION: "a tool call needs approval",
    ReviewTiming.AFTER_EXECUTION: "the task has finished",
}
_OUTPUT_LABEL = {
    ReviewTiming.BEFORE_EXECUTION: "Task input",
    ReviewTiming.DURING_EXECUTION: "Tool input",
    ReviewTiming.AFTER_EXECUTION: "Output",
}
_THEN = {
    OnTimeoutAction.CONTINUE: "then continue",
    OnTimeoutAction.EXIT_EARLY: "then exit early",
    OnTimeoutAction.FAIL: "then fail the run",
}


class ConsoleReviewHandler:
    """Asks the person at the terminal. See the module docstring for the answers it accepts.

    ``stdin``/``stdout`` default to ``sys.stdin``/``sys.stdout`` as they are at review time.
    ``max_chars`` truncates long output in the banner (the full length is shown);
    ``max_attempts`` bounds how often an unknown answer is asked again; ``ask_reason`` asks for
    an optional reason after ``x``; ``countdown`` forces the live countdown on or off (default:
    on when both streams are terminals).
    """

    def __init__(
        self,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        *,
        max_chars: int = 2000,
        max_attempts: int = 5,
        ask_reason: bool = True,
        countdown: bool | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self._stdin = stdin
        self._stdout = stdout
        self.max_chars = max_chars
        self.max_attempts = max_attempts
        self.ask_reason = ask_reason
        self.countdown = countdown

    def __repr__(self) -> str:
        return f"ConsoleReviewHandler(max_chars={self.max_chars}, max_attempts={self.max_attempts})"

    def review(self, request: ReviewRequest) -> ReviewDecision:
        """Show the banner and wait for an answer, at most ``request.timeout`` in all."""
        seconds = request.timeout_seconds
        deadline = None if seconds is None else time.monotonic() + seconds
        if not CONSOLE_LOCK.acquire(timeout=-1 if seconds is None else seconds):
            return apply_on_timeout(
                request,
                reason=f"Review timed out after {request.describe_timeout()} "
                "waiting for another console review to finish",
            )
        try:
            return _Conversation(self, request, deadline).run()
        finally:
            CONSOLE_LOCK.release()


class _Conversation:
    """One review on the console, under the lock."""

    def __init__(
        self, handler: ConsoleReviewHandler, request: ReviewRequest, deadline: float | None
    ) -> None:
        self.handler = handler
        self.request = request
        self.deadline = deadline
        self.stdin: TextIO = handler._stdin or sys.stdin
        self.stdout: TextIO = handler._stdout or sys.stdout
        self.reader = _reader_for(self.stdin)
        live = handler.countdown
        if live is None:
            live = _is_tty(self.stdin) and _is_tty(self.stdout)
        self.live = live and deadline is not None
        self.eof = False

    # -- output --------------------------------------------------------------------------------

    def write(self, text: str) -> None:
        try:
            self.stdout.write(text)
            self.stdout.flush()
        except (OSError, ValueError) as exc:
            raise _OutputClosed(str(exc)) from exc

    def try_write(self, text: str) -> None:
        with contextlib.suppress(_OutputClosed):
            self.write(text)

    def banner(self) -> str:
        request = self.request
        limit = self.handler.max_chars
        lines = [
            "",
            _RULE,
            f" REVIEW REQUESTED: {_TIMING_TITLE[request.timing]}",
            _RULE,
            f"Task:    {shown(truncate(request.task_description, limit))}",
        ]
        if request.tool_name:
            lines.append(f"Tool:    {shown(request.tool_name)}")
        label = _OUTPUT_LABEL[request.timing]
        if request.output:
            lines.append(f"{label}:")
            text = shown(truncate(request.output, limit))
            lines.extend("  " + line for line in text.split("\n"))
        else:
            lines.append(f"{label}: (empty)")
        if request.prompt:
            lines.append(f"Prompt:  {shown(request.prompt)}")
        if request.timeout_seconds is None:
            lines.append("Timeout: none, waiting for your answer")
        else:
            lines.append(f"Timeout: {request.describe_timeout()}, {_THEN[request.on_timeout]}")
        lines.append(_THIN_RULE)
        during = request.timing is ReviewTiming.DURING_EXECUTION
        exit_text = "reject the call" if during else "exit early"
        lines.append(f"[c] or Enter: continue    [e]: edit    [x]: {exit_text}")
        return "\n".join(lines) + "\n"

    def footer(self, decision: ReviewDecision) -> None:
        if isinstance(decision, Continue):
            text = "continue"
        elif isinstance(decision, Edit):
            text = f"edit ({len(decision.revised_output)} characters)"
        else:
            text = "exit early" + (f": {decision.reason}" if decision.reason else "")
        self.try_write(f"-> Decision: {text}\n{_RULE}\n")

    # -- input ---------------------------------------------------------------------------------

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def expired(self) -> bool:
        remaining = self.remaining()
        return remaining is not None and remaining <= 0

    def read(self, prompt: str, *, live: bool = False) -> str | None:
        """One line without its newline; None on timeout or end of input."""
        if live and self.live:
            self.write(f"Time left: {clock(self.remaining() or 0)}\n{prompt}")
        else:
            self.write(prompt)
        while True:  # each turn waits at most 1 s with a countdown, else until the deadline
            remaining = self.remaining()
            if remaining is not None and remaining <= 0:
                return None
            countdown = live and self.live and remaining is not None
            wait = min(1.0, remaining) if countdown and remaining is not None else remaining
            line = self.reader.readline(wait)
            if isinstance(line, _Timeout):
                if countdown:
                    # Rewrite the status line above the prompt, leaving the typed input alone.
                    self.write(
                        f"\0337\033[1A\rTime left: {clock(self.remaining() or 0)}\033[K\0338"
                    )
                continue
            if line == "":
                self.eof = True
                return None
            return line.rstrip("\r\n")

    def no_answer(self) -> ReviewDecision:
        if self.eof:
            reason = "Review got no answer: end of input"
            self.try_write("\nEnd of input: no answer.\n")
        else:
            reason = f"Review timed out after {self.request.describe_timeout()}"
            self.try_write("\nNo answer in time.\n")
        return apply_on_timeout(self.request, reason=reason)

    # -- the dialogue --------------------------------------------------------------------------

    def run(self) -> ReviewDecision:
        try:
            dropped = self.reader.discard_stale()
            self.write(self.banner())
            if dropped:
                self.write(f"(ignored {dropped} line(s) typed before this review)\n")
            decision = self.dialogue()
        except _OutputClosed:
            return apply_on_timeout(
                self.request, reason="Review could not be shown: the console output is closed"
            )
        self.footer(decision)
        return decision

    def dialogue(self) -> ReviewDecision:
        for attempt in range(1, self.handler.max_attempts + 1):
            answer = self.read("> ", live=True)
            if answer is None:
                return self.no_answer()
            word, _, rest = answer.strip().partition(" ")
            key, rest = word.lower(), rest.strip()
            if key in ("", "c", "continue") and not rest:
                return Continue()
            if key in ("e", "edit"):
                edited = self.edit(rest)
                if edited is not None:
                    return edited
                if self.eof or self.expired():
                    return self.no_answer()
                continue
            if key in ("x", "exit"):
                return self.exit(rest)
            if attempt < self.handler.max_attempts:
                self.write("Please answer c (or Enter) to continue, e to edit, x to exit early.\n")
        self.try_write(f"\nNo valid answer after {self.handler.max_attempts} attempts.\n")
        return apply_on_timeout(
            self.request,
            reason=f"Review got no valid answer after {self.handler.max_attempts} attempts",
        )

    def edit(self, inline: str) -> Edit | None:
        """The edit decision, or None when cancelled, timed out or cut off by end of input."""
        if inline:
            return Edit(inline)
        first = self.read(
            f"Replacement text, one line (or {MULTILINE_FENCE} to start several lines, closed by "
            f"another {MULTILINE_FENCE}; an empty line cancels):\n"
        )
        if first is None:
            return None
        if first.strip() == "":
            self.write("Edit cancelled.\n")
            return None
        if first.strip() != MULTILINE_FENCE:
            return Edit(first)
        lines: list[str] = []
        while True:  # bounded by the deadline and by end of input
            line = self.read("")
            if line is None:
                return None  # an unfinished edit is never applied
            if line.strip() == MULTILINE_FENCE:
                return Edit("\n".join(lines))
            lines.append(line)

    def exit(self, inline: str) -> ExitEarly:
        reason: str | None = inline or None
        if reason is None and self.handler.ask_reason:
            line = self.read("Reason (optional, Enter to skip): ")
            reason = (line or "").strip() or None
        return ExitEarly(reason)


__all__ = ["CONSOLE_LOCK", "ConsoleReviewHandler"]
