"""Two approval-gated tools of one model turn run concurrently and both ask the console.

A real child Python runs the ensemble with ``ConsoleReviewHandler()`` on its real stdin and
stdout; this test is the human at the other end of the pipes. The process-wide console lock must
show one whole banner at a time, and each answer must reach the review it was typed for.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

from _review_support import PYTHON, REPO_ROOT, subprocess_env

CHILD = r"""
import json, sys
from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.testing import ScriptedChatModel, tool_calls
from agentensemble_review import ConsoleReviewHandler

RAN = []

@tool(requires_approval=True)
def archive(path: str) -> str:
    "Archive a directory."
    RAN.append("archive")
    return "archived " + path

@tool(requires_approval=True)
def purge(path: str) -> str:
    "Delete a directory for good."
    RAN.append("purge")
    return "purged " + path

class Announcing:
    # Says on stderr that a review was asked, then lets the console handler do it all.
    def __init__(self):
        self.console = ConsoleReviewHandler()  # the real sys.stdin and sys.stdout

    def review(self, request):
        print("ASKED " + request.tool_name, file=sys.stderr, flush=True)
        return self.console.review(request)

model = ScriptedChatModel([
    tool_calls(("archive", {"path": "/data/2023"}), ("purge", {"path": "/data/tmp"})),
    "Tidied up.",
])
agent = Agent(role="Janitor", goal="Tidy the disk", tools=[archive, purge], llm=model)
result = Ensemble(
    tasks=[Task(description="Tidy /data", agent=agent)], review_handler=Announcing()
).run()
calls = {r.name: r.output for r in result.task_outputs[0].tool_calls}
print("RESULT " + json.dumps({"ran": RAN, "calls": calls, "raw": result.raw}), flush=True)
"""

TOOLS = ("archive", "purge")
ARGS = {"archive": '{"path": "/data/2023"}', "purge": '{"path": "/data/tmp"}'}
BANNER = " REVIEW REQUESTED: a tool call needs approval"
DECISION = "-> Decision: "
WAIT = 30.0  # generous upper bound for each step


@dataclass
class Collected:
    """Everything a child wrote on one stream so far, read by a thread in raw chunks (the
    console's ``> `` prompt ends no line)."""

    chunks: list[bytes] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def text(self) -> str:
        with self.lock:
            return b"".join(self.chunks).decode("utf-8", "replace")


def _drain(stream: IO[bytes], into: Collected) -> None:
    fd = stream.fileno()
    while True:  # ends at EOF, when the child exits
        chunk = os.read(fd, 4096)
        if not chunk:
            return
        with into.lock:
            into.chunks.append(chunk)


@dataclass
class Child:
    proc: subprocess.Popen[bytes]
    out: Collected
    err: Collected

    def wait_until(self, what: str, condition: Callable[[], bool]) -> None:
        deadline = time.monotonic() + WAIT
        while not condition():  # bounded by the deadline
            if time.monotonic() > deadline or (self.proc.poll() is not None and not condition()):
                raise AssertionError(
                    f"gave up waiting for {what}; stdout={self.out.text!r} stderr={self.err.text!r}"
                )
            time.sleep(0.02)

    def type(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode())
        self.proc.stdin.flush()

    def finish(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        self.proc.wait(timeout=WAIT)
        assert self.proc.returncode == 0, self.err.text
        lines = [line for line in self.out.text.splitlines() if line.startswith("RESULT ")]
        assert lines, f"no result; stdout={self.out.text!r} stderr={self.err.text!r}"
        result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
        return result


@contextmanager
def child() -> Iterator[Child]:
    proc = subprocess.Popen(
        [PYTHON, "-c", CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO_ROOT,
        env=subprocess_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = Collected(), Collected()
    readers = [
        threading.Thread(target=_drain, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, err), daemon=True),
    ]
    for reader in readers:
        reader.start()
    try:
        yield Child(proc, out, err)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=WAIT)
        for reader in readers:
            reader.join(timeout=5)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def reviews(stdout: str) -> list[str]:
    """The console reviews in ``stdout``, each from its banner to its decision line.

    Fails unless banners and decisions strictly alternate: a second banner before the first
    review's decision would be an interleaved prompt.
    """
    marks = sorted(
        [(m.start(), "banner") for m in re.finditer(re.escape(BANNER), stdout)]
        + [(m.end(), "decision") for m in re.finditer(re.escape(DECISION) + ".*", stdout)]
    )
    kinds = [kind for _, kind in marks]
    assert kinds == ["banner", "decision"] * (len(kinds) // 2), f"interleaved: {stdout!r}"
    return [stdout[marks[i][0] : marks[i + 1][0]] for i in range(0, len(marks), 2)]


def tool_of(review: str) -> str:
    (name,) = re.findall(r"^Tool:    (\w+)$", review, flags=re.MULTILINE)
    return str(name)


def assert_whole(review: str) -> None:
    """One complete banner: moment, task, tool, its input, prompt, timeout, the answer keys."""
    name = tool_of(review)
    for part in (
        "Task:    Tidy /data",
        "Tool input:",
        f"  {ARGS[name]}",
        f"Prompt:  Approve this call to tool '{name}'?",
        "Timeout: 5m, then exit early",
        "[c] or Enter: continue    [e]: edit    [x]: reject the call",
        "> ",
    ):
        assert part in review, f"{part!r} missing from review:\n{review}"
    other = next(t for t in TOOLS if t != name)
    assert other not in review


def test_two_concurrent_approvals_are_shown_one_at_a_time_and_each_answer_applies() -> None:
    with child() as run:
        # Both tool calls ask at once; only one banner may be on screen while the other waits.
        run.wait_until(
            "both reviews asked and one banner shown",
            lambda: (
                all(f"ASKED {t}" in run.err.text for t in TOOLS) and run.out.text.endswith("> ")
            ),
        )
        time.sleep(0.2)  # a second banner, were it not held back, would have printed by now
        assert run.out.text.count(BANNER) == 1
        first = tool_of(run.out.text)
        run.type("c\n")
        run.wait_until(
            "the second banner",
            lambda: run.out.text.count(BANNER) == 2 and run.out.text.endswith("> "),
        )
        run.type("x too risky\n")
        result = run.finish()
        stdout = run.out.text

    second = next(t for t in TOOLS if t != first)
    shown = reviews(stdout)
    assert [tool_of(r) for r in shown] == [first, second]
    for review in shown:
        assert_whole(review)
    assert shown[0].rstrip().endswith("-> Decision: continue")
    assert shown[1].rstrip().endswith("-> Decision: exit early: too risky")
    assert result["ran"] == [first]
    calls = result["calls"]
    assert calls[first] == ("archived /data/2023" if first == "archive" else "purged /data/tmp")
    assert calls[second] == "Error: Rejected by reviewer: too risky"
    assert result["raw"] == "Tidied up."


def test_end_of_input_rejects_both_calls_and_approves_nothing() -> None:
    with child() as run:
        result = run.finish()  # closes stdin at once: end of input, as after Ctrl-D
        stdout = run.out.text

    shown = reviews(stdout)
    assert sorted(tool_of(r) for r in shown) == sorted(TOOLS)
    for review in shown:
        assert_whole(review)
        assert "End of input: no answer." in review
        assert review.rstrip().endswith(
            "-> Decision: exit early: Review got no answer: end of input"
        )
    assert result["ran"] == []
    assert result["calls"] == {
        name: "Error: Rejected by reviewer: Review got no answer: end of input" for name in TOOLS
    }
