"""Review on the terminal: show what is at stake, read ``c`` / ``e`` / ``x``, within the timeout.

Answers (case-insensitive, one per line):

- ``c``, ``continue`` or an empty line (Enter): continue.
- ``e`` (or ``edit``): the next line is the replacement text. For several lines, answer that
  prompt with a line of three double quotes (``\"\"\"``), type the lines, and close with another
  ``\"\"\"`` line. An empty line cancels the edit. ``e some text`` edits in one line.
- ``x`` (or ``exit``): exit early (reject the tool call); then an optional reason line.
  ``x some reason`` gives the reason in one line.

No answer before the timeout, end of input (EOF, a closed pipe) or too many unknown answers
all apply the request's ``on_timeout`` action: a console review never approves by default. A
banner that cannot be written (a closed or failing output) raises ``ReviewDisplayError``: nobody
saw the request, so it is neither a timeout nor approval. A process-wide lock serialises console
reviews, so concurrent ones (parallel tool calls) never interleave; time spent waiting for that
lock counts against the timeout.

Every text under review is shown whole and escaped (``escape_for_display``): control characters,
bidi overrides, zero-width characters and lone surrogates appear as visible escapes, and
characters the output's encoding lacks too. Nothing typed before a review is shown answers it
(see ``_console_input``): on a terminal, pending input is flushed when the banner appears; on a
pipe, answers given in advance work in order until a review ends without one.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import TextIO

from agentensemble._base.display import escape_for_display
from agentensemble.redaction import redact_text
from agentensemble_review._asking import apply_on_timeout
from agentensemble_review._console_input import TIMED_OUT, review_input_for
from agentensemble_review._format import clock
from agentensemble_review.errors import ReviewDisplayError
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


def shown(text: str, stream: object = None) -> str:
    """``text`` safe for the terminal: every invisible or unencodable character as a visible
    escape (see ``agentensemble._base.display.escape_for_display``). Newlines and tabs are kept."""
    return escape_for_display(redact_text(text), encoding=getattr(stream, "encoding", None))


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
    ``max_chars`` (default None: everything) bounds how much of the text under review is shown;
    text cut that way is said to be cut, and cannot be approved (only edited or rejected).
    ``max_attempts`` bounds how often an unknown answer is asked again; ``ask_reason`` asks for
    an optional reason after ``x``; ``countdown`` forces the live countdown on or off (default:
    on when both streams are terminals).
    """

    def __init__(
        self,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        *,
        max_chars: int | None = None,
        max_attempts: int = 5,
        ask_reason: bool = True,
        countdown: bool | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if max_chars is not None and max_chars < 1:
            raise ValueError("max_chars must be None (show everything) or at least 1")
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


def _field(label: str, text: str) -> list[str]:
    """``label`` and ``text``, continuation lines indented: nothing lands in column 0."""
    first, *rest = text.split("\n")
    return [f"{label}{first}", *("         " + line for line in rest)]


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
        self.input = review_input_for(self.stdin)
        live = handler.countdown
        if live is None:
            live = _is_tty(self.stdin) and _is_tty(self.stdout)
        self.live = live and deadline is not None
        self.eof = False
        limit = handler.max_chars
        self.cut = limit is not None and len(request.output) > limit

    # -- output --------------------------------------------------------------------------------

    def write(self, text: str) -> None:
        """Write ``text``; a failure is a ``ReviewDisplayError`` (never a timeout, never a yes)."""
        try:
            self.stdout.write(text)
            self.stdout.flush()
        except (OSError, ValueError) as exc:  # closed stream, broken pipe, unencodable text
            raise ReviewDisplayError(
                f"Review could not be shown on the console ({type(exc).__name__}); nothing "
                "was approved"
            ) from exc

    def try_write(self, text: str) -> None:
        with contextlib.suppress(ReviewDisplayError):
            self.write(text)

    def show(self, text: str) -> str:
        return shown(text, self.stdout)

    def banner(self) -> str:
        request = self.request
        lines = [
            "",
            _RULE,
            f" REVIEW REQUESTED: {_TIMING_TITLE[request.timing]}",
            _RULE,
            *_field("Task:    ", self.show(request.task_description)),
        ]
        if request.tool_name:
            lines += _field("Tool:    ", self.show(request.tool_name))
        label = _OUTPUT_LABEL[request.timing]
        if request.output:
            lines.append(f"{label}:")
            limit = self.handler.max_chars
            text = request.output[:limit] if self.cut and limit is not None else request.output
            lines.extend("  " + line for line in self.show(text).split("\n"))
            if self.cut:
                lines.append(
                    f"[CUT: only the first {limit} of {len(request.output)} characters are "
                    "shown. What is not shown cannot be approved: answer e to replace it or "
                    "x to reject.]"
                )
        else:
            lines.append(f"{label}: (empty)")
        if request.prompt:
            lines += _field("Prompt:  ", self.show(request.prompt))
        if request.timeout_seconds is None:
            lines.append("Timeout: none, waiting for your answer")
        else:
            lines.append(f"Timeout: {request.describe_timeout()}, {_THEN[request.on_timeout]}")
        lines.append(_THIN_RULE)
        during = request.timing is ReviewTiming.DURING_EXECUTION
        exit_text = "reject the call" if during else "exit early"
        approve = "" if self.cut else "[c] or Enter: continue    "
        lines.append(f"{approve}[e]: edit    [x]: {exit_text}")
        return "\n".join(lines) + "\n"

    def footer(self, decision: ReviewDecision) -> None:
        if isinstance(decision, Continue):
            text = "continue"
        elif isinstance(decision, Edit):
            text = f"edit ({len(decision.revised_output)} characters)"
        else:
            text = "exit early" + (f": {self.show(decision.reason)}" if decision.reason else "")
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
            line = self.input.readline(wait)
            if line is TIMED_OUT:
                if countdown:
                    # Rewrite the status line above the prompt, leaving the typed input alone.
                    self.write(
                        f"\0337\033[1A\rTime left: {clock(self.remaining() or 0)}\033[K\0338"
                    )
                continue
            assert isinstance(line, str)
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
        answered = False
        self.input.begin()
        try:
            self.write(self.banner())
            dropped = self.input.show()  # input typed before the banner is discarded here
            if dropped:
                self.write(f"(ignored {dropped} line(s) typed before this review)\n")
            decision, answered = self.dialogue()
        finally:
            self.input.end(answered=answered)
        self.footer(decision)
        return decision

    def dialogue(self) -> tuple[ReviewDecision, bool]:
        """The decision, and whether it was answered (False: ``on_timeout`` applied)."""
        for attempt in range(1, self.handler.max_attempts + 1):
            answer = self.read("> ", live=True)
            if answer is None:
                return self.no_answer(), False
            word, _, rest = answer.strip().partition(" ")
            key, rest = word.lower(), rest.strip()
            if key in ("", "c", "continue") and not rest and not self.cut:
                return Continue(), True
            if key in ("e", "edit"):
                edited = self.edit(rest)
                if edited is not None:
                    return edited, True
                if self.eof or self.expired():
                    return self.no_answer(), False
                continue
            if key in ("x", "exit"):
                return self.exit(rest), True
            if attempt < self.handler.max_attempts:
                if self.cut:
                    self.write("The text was cut, so it cannot be approved: answer e or x.\n")
                else:
                    self.write(
                        "Please answer c (or Enter) to continue, e to edit, x to exit early.\n"
                    )
        self.try_write(f"\nNo valid answer after {self.handler.max_attempts} attempts.\n")
        return apply_on_timeout(
            self.request,
            reason=f"Review got no valid answer after {self.handler.max_attempts} attempts",
        ), False

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
