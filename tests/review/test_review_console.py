"""ConsoleReviewHandler: real subprocesses with piped stdin, then in-process edge cases and the
process-wide lock that keeps concurrent reviews from interleaving."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import select
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from _review_support import PYTHON, REPO_ROOT, subprocess_env

from agentensemble_review import (
    ConsoleReviewHandler,
    Continue,
    Edit,
    ExitEarly,
    OnTimeoutAction,
    ReviewDisplayError,
    ReviewRequest,
    ReviewTimeoutError,
    ReviewTiming,
    aask,
)
from agentensemble_review import console as console_module

CHILD = """
import json, sys, time
from agentensemble_review import ConsoleReviewHandler, ReviewRequest, ReviewTimeoutError
request = ReviewRequest(
    timing="after_execution",
    task_description="Write a haiku about rain",
    output="Rain falls on the roof",
    prompt="Is the haiku good?",
    timeout=float(sys.argv[1]),
    on_timeout=sys.argv[2],
)
started = time.monotonic()
try:
    result = ConsoleReviewHandler().review(request).model_dump()
except ReviewTimeoutError as exc:
    result = {"error": type(exc).__name__, "message": str(exc)}
result["elapsed"] = time.monotonic() - started
print("RESULT " + json.dumps(result))
"""


def run_child(
    stdin: str | None, timeout: float = 10.0, on_timeout: str = "exit_early"
) -> tuple[dict[str, Any], str]:
    """Run the review in a fresh Python with ``stdin`` piped in (None: a pipe left open)."""
    args = [PYTHON, "-c", CHILD, str(timeout), on_timeout]
    if stdin is None:
        with subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
            env=subprocess_env(),
        ) as proc:
            assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
            try:
                proc.wait(timeout=timeout + 20)  # stdin stays open: the child never sees EOF
            finally:
                proc.kill()
            out, err = proc.stdout.read(), proc.stderr.read()
            proc.stdin.close()
    else:
        done = subprocess.run(
            args,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout + 20,
            cwd=REPO_ROOT,
            env=subprocess_env(),
        )
        out, err = done.stdout, done.stderr
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert lines, f"no result; stdout={out!r} stderr={err!r}"
    return json.loads(lines[-1][len("RESULT ") :]), out


def decision(result: dict[str, Any]) -> Any:
    kind = result.get("decision")
    if kind == "continue":
        return Continue()
    if kind == "edit":
        return Edit(result["revised_output"])
    if kind == "exit_early":
        return ExitEarly(result["reason"], timed_out=result["timed_out"])
    return result


SUBPROCESS_CASES = [
    pytest.param("c\n", Continue(), id="c"),
    pytest.param("\n", Continue(), id="enter"),
    pytest.param("CONTINUE\n", Continue(), id="word"),
    pytest.param("e\nRain drums on the roof\n", Edit("Rain drums on the roof"), id="edit"),
    pytest.param("e Inline replacement\n", Edit("Inline replacement"), id="edit-inline"),
    pytest.param('e\n"""\nline one\nline two\n"""\n', Edit("line one\nline two"), id="edit-multi"),
    pytest.param("x\nToo gloomy\n", ExitEarly("Too gloomy"), id="exit-reason"),
    pytest.param("x\n\n", ExitEarly(None), id="exit-no-reason"),
    pytest.param("x\n", ExitEarly(None), id="exit-then-eof"),
    pytest.param("what?\nc\n", Continue(), id="unknown-then-c"),
    pytest.param("e\n\nc\n", Continue(), id="edit-cancelled-then-c"),
]


@pytest.mark.parametrize(("stdin", "expected"), SUBPROCESS_CASES)
def test_console_answers_through_a_real_pipe(stdin: str, expected: Any) -> None:
    result, out = run_child(stdin)
    assert decision(result) == expected
    assert "REVIEW REQUESTED: the task has finished" in out
    assert "Write a haiku about rain" in out
    assert "Rain falls on the roof" in out
    assert "Is the haiku good?" in out
    assert "Timeout: 10s, then exit early" in out


@pytest.mark.parametrize(
    "stdin",
    [
        pytest.param("", id="immediate-eof"),
        pytest.param("e\n", id="eof-before-edit-text"),
        pytest.param('e\n"""\nunfinished\n', id="eof-inside-multiline-edit"),
        pytest.param("maybe\n", id="eof-after-unknown-answer"),
    ],
)
def test_end_of_input_is_never_approval(stdin: str) -> None:
    result, out = run_child(stdin)
    assert decision(result) == ExitEarly("Review got no answer: end of input", timed_out=True)
    assert "End of input" in out


def test_end_of_input_with_on_timeout_fail_raises() -> None:
    result, _ = run_child("", on_timeout="fail")
    assert result["error"] == "ReviewTimeoutError"


def test_end_of_input_with_on_timeout_continue_continues() -> None:
    # The user opted in to "no answer means go on"; EOF is "no answer", not an implicit Enter.
    result, _ = run_child("", on_timeout="continue")
    assert decision(result) == Continue()


def test_silence_on_an_open_pipe_times_out() -> None:
    result, out = run_child(None, timeout=0.5)
    assert decision(result) == ExitEarly("Review timed out after 0.5s", timed_out=True)
    assert 0.45 <= result["elapsed"] < 0.5 + 5  # slack for a busy machine; the pipe stays open
    assert "No answer in time" in out


def test_too_many_unknown_answers_apply_on_timeout() -> None:
    result, out = run_child("a\nb\nd\nf\ng\nc\n")
    assert decision(result) == ExitEarly(
        "Review got no valid answer after 5 attempts", timed_out=True
    )
    assert out.count("Please answer c") == 4


# -- in process ---------------------------------------------------------------------------------


def make_request(
    task: str = "Task",
    output: str = "output",
    timeout: float = 5.0,
    on_timeout: OnTimeoutAction = OnTimeoutAction.EXIT_EARLY,
    timing: ReviewTiming = ReviewTiming.AFTER_EXECUTION,
    tool_name: str | None = None,
) -> ReviewRequest:
    return ReviewRequest(
        timing=timing,
        task_description=task,
        output=output,
        tool_name=tool_name,
        timeout=timedelta(seconds=timeout),
        on_timeout=on_timeout,
    )


class BlockingStdin(io.TextIOBase):
    """A stdin the test feeds line by line; readline blocks until a line (or close) arrives."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._ready = threading.Condition()
        self._closed = False

    def feed(self, line: str) -> None:
        with self._ready:
            self._lines.append(line)
            self._ready.notify_all()

    def wait_until_read(self, timeout: float = 30) -> None:
        """Block until every fed line has been read by someone."""
        with self._ready:
            assert self._ready.wait_for(lambda: not self._lines, timeout), "line never read"

    def finish(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        with self._ready:
            self._ready.wait_for(lambda: self._lines or self._closed, timeout=30)
            line = self._lines.pop(0) if self._lines else ""
            self._ready.notify_all()  # wakes wait_until_read
            return line


@pytest.fixture
def blocking_stdin() -> Iterator[BlockingStdin]:
    stdin = BlockingStdin()
    yield stdin
    stdin.finish()  # release any reader thread still waiting


def test_banner_shows_the_whole_tool_input_by_default() -> None:
    out = io.StringIO()
    # a second key far past any display limit: the reviewer must see it
    arguments = '{"to": "alice", "note": "' + "y" * 5000 + '", "to": "mallory"}'
    request = make_request(
        output=arguments, timing=ReviewTiming.DURING_EXECUTION, tool_name="send_money"
    )
    assert ConsoleReviewHandler(io.StringIO("c\n"), out).review(request) == Continue()
    text = out.getvalue()
    assert "REVIEW REQUESTED: a tool call needs approval" in text
    assert "Tool:    send_money" in text
    assert '"to": "mallory"}' in text
    assert "[x]: reject the call" in text


def test_text_cut_by_max_chars_says_so_and_cannot_be_approved() -> None:
    out = io.StringIO()
    handler = ConsoleReviewHandler(io.StringIO("c\n\nx too long\n"), out, max_chars=100)
    request = make_request(
        output="y" * 5000, timing=ReviewTiming.DURING_EXECUTION, tool_name="delete_files"
    )
    assert handler.review(request) == ExitEarly("too long")
    text = out.getvalue()
    assert "[CUT: only the first 100 of 5000 characters are shown." in text
    assert "y" * 101 not in text
    assert "[c] or Enter" not in text
    assert text.count("The text was cut, so it cannot be approved: answer e or x.") == 2


def test_zero_timeout_says_so_and_waits() -> None:
    out = io.StringIO()
    decision = ConsoleReviewHandler(io.StringIO("x no thanks\n"), out).review(
        make_request(timeout=0)
    )
    assert decision == ExitEarly("no thanks")
    assert "Timeout: none, waiting for your answer" in out.getvalue()


@pytest.mark.parametrize("on_timeout", list(OnTimeoutAction))
def test_closed_output_is_a_review_error_never_a_timeout(on_timeout: OnTimeoutAction) -> None:
    out = io.StringIO()
    out.close()
    with pytest.raises(ReviewDisplayError, match="could not be shown"):
        ConsoleReviewHandler(io.StringIO("c\n"), out).review(make_request(on_timeout=on_timeout))


def test_a_late_line_from_a_timed_out_review_does_not_answer_the_next(
    blocking_stdin: BlockingStdin,
) -> None:
    handler = ConsoleReviewHandler(blocking_stdin, io.StringIO())
    first = handler.review(make_request(timeout=0.2))
    assert first.timed_out  # type: ignore[union-attr]
    blocking_stdin.feed("c\n")  # typed too late, read by the reader left waiting
    blocking_stdin.wait_until_read()
    out = io.StringIO()
    second = ConsoleReviewHandler(blocking_stdin, out).review(make_request(timeout=0.3))
    assert second == ExitEarly("Review timed out after 0.3s", timed_out=True)
    assert "ignored 1 line(s) typed before this review" in out.getvalue()


# The status line rewritten in place: save the cursor, go up a line, rewrite, restore. The value
# shown depends on when the one-second tick lands, which a busy machine can delay.
REWRITTEN = re.compile(
    re.escape("\0337\033[1A\rTime left: ") + r"0:0[0-2]" + re.escape("\033[K\0338")
)


def test_live_countdown_rewrites_the_status_line(blocking_stdin: BlockingStdin) -> None:
    out = io.StringIO()
    handler = ConsoleReviewHandler(blocking_stdin, out, countdown=True)
    decision = handler.review(make_request(timeout=1.5))
    assert decision == ExitEarly("Review timed out after 1.5s", timed_out=True)
    text = out.getvalue()
    assert "Time left: 0:02\n> " in text  # printed above the prompt, rounded up
    assert REWRITTEN.search(text)  # rewritten in place, cursor kept


def test_no_countdown_on_pipes_by_default() -> None:
    out = io.StringIO()
    ConsoleReviewHandler(io.StringIO("c\n"), out).review(make_request())
    assert "Time left" not in out.getvalue()


class RecordingStdout(io.TextIOBase):
    """Records which thread wrote each chunk; writes slowly to invite interleaving."""

    def __init__(self) -> None:
        self.chunks: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self.chunks.append((threading.current_thread().name, text))
        time.sleep(0.002)
        return len(text)

    def writers(self) -> list[str]:
        """The thread names in writing order, consecutive repeats collapsed."""
        order: list[str] = []
        for name, _ in self.chunks:
            if not order or order[-1] != name:
                order.append(name)
        return order


class SlowStdin(io.TextIOBase):
    """Serves lines with a delay, like a human typing."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = list(lines)
        self._lock = threading.Lock()

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        time.sleep(0.05)
        with self._lock:
            return self._lines.pop(0) if self._lines else ""


def review_in_threads(handler: ConsoleReviewHandler, count: int) -> list[Any]:
    results: list[Any] = [None] * count
    barrier = threading.Barrier(count)

    def run(index: int) -> None:
        barrier.wait(5)
        results[index] = handler.review(make_request(task=f"Task {index}", timeout=10))

    threads = [threading.Thread(target=run, args=(i,), name=f"reviewer-{i}") for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    return results


def test_concurrent_console_reviews_never_interleave() -> None:
    stdout = RecordingStdout()
    handler = ConsoleReviewHandler(SlowStdin(["c\n", "c\n", "c\n"]), stdout)
    assert review_in_threads(handler, 3) == [Continue()] * 3
    writers = stdout.writers()
    assert sorted(writers) == ["reviewer-0", "reviewer-1", "reviewer-2"]  # one block per review
    for name in writers:
        block = "".join(text for who, text in stdout.chunks if who == name)
        assert block.count("REVIEW REQUESTED") == 1
        assert f"Task {name[-1]}" in block
        assert block.rstrip().endswith("=" * 64)  # the footer closes the block


def test_the_interleaving_check_would_catch_a_missing_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoLock:
        def acquire(self, timeout: float = -1) -> bool:
            return True

        def release(self) -> None:
            pass

    monkeypatch.setattr(console_module, "CONSOLE_LOCK", NoLock())
    stdout = RecordingStdout()
    handler = ConsoleReviewHandler(SlowStdin(["c\n", "c\n"]), stdout)
    review_in_threads(handler, 2)
    assert len(stdout.writers()) > 2  # the two conversations interleaved


@pytest.mark.anyio
async def test_parallel_aask_calls_are_serialised_too() -> None:
    stdout = RecordingStdout()
    handler = ConsoleReviewHandler(SlowStdin(["c\n", "x stop\n"]), stdout)
    results = await asyncio.gather(
        aask(handler, make_request(task="Task A")), aask(handler, make_request(task="Task B"))
    )
    assert sorted(r.decision for r in results) == ["continue", "exit_early"]
    assert len(stdout.writers()) == 2


def test_waiting_for_the_lock_counts_against_the_timeout(blocking_stdin: BlockingStdin) -> None:
    holder = ConsoleReviewHandler(blocking_stdin, io.StringIO())
    first = threading.Thread(target=holder.review, args=(make_request(timeout=60),), daemon=True)
    first.start()
    deadline = time.monotonic() + 30
    while not console_module.CONSOLE_LOCK.locked():  # the first review holds the console
        assert time.monotonic() < deadline, "the first review never took the console"
        time.sleep(0.01)
    started = time.monotonic()
    waiter = ConsoleReviewHandler(io.StringIO("c\n"), io.StringIO())
    decision = waiter.review(make_request(timeout=0.3))
    assert decision.timed_out  # type: ignore[union-attr]
    assert "another console review" in (decision.reason or "")  # type: ignore[union-attr]
    assert time.monotonic() - started < 0.3 + 5  # not the holder's 60 s
    blocking_stdin.feed("c\n")
    first.join(5)


def test_timeout_with_fail_raises_in_process(blocking_stdin: BlockingStdin) -> None:
    handler = ConsoleReviewHandler(blocking_stdin, io.StringIO())
    with pytest.raises(ReviewTimeoutError):
        handler.review(make_request(timeout=0.2, on_timeout=OnTimeoutAction.FAIL))


def run_child_on_a_terminal(answer: bytes | None, timeout: float) -> tuple[dict[str, Any], str]:
    """Run the review with stdin and stdout on a pseudo-terminal; type ``answer`` after 0.3 s."""
    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [PYTHON, "-c", CHILD, str(timeout), "exit_early"],
        stdin=slave,
        stdout=slave,
        stderr=subprocess.PIPE,
        cwd=REPO_ROOT,
        env=subprocess_env(),
    )
    os.close(slave)
    output = b""
    typed = answer is None
    started = time.monotonic()
    try:
        while time.monotonic() - started < timeout + 20:  # bounded
            if not typed and time.monotonic() - started > 0.3 and b"> " in output:
                os.write(master, answer or b"")
                typed = True
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
            elif proc.poll() is not None:
                break
    finally:
        proc.kill()
        proc.wait(10)
        os.close(master)
        if proc.stderr is not None:
            proc.stderr.close()
    text = output.decode("utf-8", errors="replace").replace("\r\n", "\n")
    lines = [line for line in text.splitlines() if line.startswith("RESULT ")]
    assert lines, f"no result; terminal showed {text!r}"
    return json.loads(lines[-1][len("RESULT ") :]), text


def test_on_a_real_terminal_a_live_countdown_runs_until_the_timeout() -> None:
    result, text = run_child_on_a_terminal(None, timeout=2.5)
    assert decision(result) == ExitEarly("Review timed out after 2.5s", timed_out=True)
    assert "Time left: 0:03" in text
    assert REWRITTEN.search(text)


def test_on_a_real_terminal_an_answer_stops_the_countdown() -> None:
    result, text = run_child_on_a_terminal(b"e Typed at the terminal\n", timeout=10)
    assert decision(result) == Edit("Typed at the terminal")
    assert "Time left: 0:10" in text


def test_text_under_review_cannot_drive_the_terminal() -> None:
    out = io.StringIO()
    request = make_request(
        task="Clean up\x1b[2J",
        output="rm -rf /\rls -l\x1b[8m hidden\nnext line\r\n\tindented",
        timing=ReviewTiming.DURING_EXECUTION,
        tool_name="shell",
    )
    ConsoleReviewHandler(io.StringIO("c\n"), out).review(request)
    text = out.getvalue()
    assert "\x1b" not in text and "\r" not in text
    assert "Task:    Clean up\\x1b[2J" in text
    assert "  rm -rf /\\rls -l\\x1b[8m hidden\n  next line\n  \tindented\n" in text


HOSTILE_TEXT = [
    pytest.param("pay \ud800 now", "pay \\ud800 now", id="lone-surrogate"),
    pytest.param("to alice\u202e yrrallam", "to alice\\u202e yrrallam", id="bidi-override"),
    pytest.param("\u2066mallory\u2069", "\\u2066mallory\\u2069", id="bidi-isolate"),
    pytest.param("mal\u200blory", "mal\\u200blory", id="zero-width-space"),
    pytest.param("ok\x1b]0;title\x07", "ok\\x1b]0;title\\x07", id="osc-title"),
    pytest.param("caf\u00e9", None, id="plain-non-ascii"),
]


@pytest.mark.parametrize("encoding", ["utf-8", "ascii", "latin-1"])
@pytest.mark.parametrize(("hostile", "escaped"), HOSTILE_TEXT)
def test_any_text_is_shown_escaped_in_any_output_encoding(
    hostile: str, escaped: str | None, encoding: str
) -> None:
    """The attack: text the terminal cannot encode made the banner fail, and the failure was
    taken as "no answer", so on_timeout=CONTINUE ran the tool unseen. Now the banner is always
    shown and the human's answer counts."""
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding=encoding, errors="strict", write_through=True)
    request = make_request(
        task=f"Task {hostile}",
        output=f'{{"to": "{hostile}"}}',
        timing=ReviewTiming.DURING_EXECUTION,
        tool_name="send_money",
        on_timeout=OnTimeoutAction.CONTINUE,
    )
    decision = ConsoleReviewHandler(io.StringIO("x looks odd\n"), out).review(request)
    assert decision == ExitEarly("looks odd")
    text = raw.getvalue().decode(encoding)
    assert "REVIEW REQUESTED" in text
    if escaped is not None:
        assert f"Task:    Task {escaped}" in text
        assert f'  {{"to": "{escaped}"}}' in text
    for invisible in ("\x1b", "\x07", "\u202e", "\u2066", "\u200b"):
        assert invisible not in text


def test_a_newline_in_the_task_cannot_fake_a_banner_line() -> None:
    out = io.StringIO()
    request = make_request(task="Tidy up\nTimeout: none\n[c] or Enter: continue")
    ConsoleReviewHandler(io.StringIO("c\n"), out).review(request)
    lines = out.getvalue().splitlines()
    assert "         Timeout: none" in lines
    assert not any(line.startswith("Timeout: none") for line in lines)


def test_the_console_shows_secrets_under_review_as_stars() -> None:
    """The terminal is a channel out of the process too: what is reviewed there is redacted
    like the web card (the ``***`` tells the reviewer a secret is leaving)."""
    text = 'send_email({"body": "key sk-live-console0123456789 and redis://:pa55word9@cache"})'
    shown = console_module.shown(text)
    assert "sk-live-console" not in shown and "pa55word9" not in shown
    assert "key *** and redis://:***@cache" in shown
