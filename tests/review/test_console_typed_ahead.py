"""Console review: nothing typed before a review is shown may answer it, on a pipe or a terminal.

The attack: an answer typed for a review that has already timed out (``x``, then Enter for the
reason) must not leave its Enter to approve the next review; keys typed while the agent was still
working must not answer the review that appears afterwards. Each scenario runs in a child Python
whose stdin is a real pipe or a real pseudo-terminal; the child waits for a marker file before
showing each review, so the test types its keys at a known moment.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _review_support import PYTHON, REPO_ROOT, subprocess_env

CHILD = r"""
import json, os, sys, time
from agentensemble_review import ConsoleReviewHandler, ReviewRequest
marker_dir, timeouts = sys.argv[1], [float(t) for t in sys.argv[2].split(",")]
handler = ConsoleReviewHandler()
for index, timeout in enumerate(timeouts):
    print(f"WAITING {index}", flush=True)
    marker = os.path.join(marker_dir, str(index))
    limit = time.monotonic() + 20
    while not os.path.exists(marker) and time.monotonic() < limit:  # bounded
        time.sleep(0.02)
    request = ReviewRequest(
        timing="during_execution", task_description="Clean up", output="rm -rf /tmp/x",
        tool_name="shell", timeout=timeout, on_timeout="exit_early",
    )
    print("RESULT " + json.dumps(handler.review(request).model_dump()), flush=True)
"""


class Child:
    """The child Python, its stdin and stdout on a pipe or a pseudo-terminal."""

    def __init__(self, terminal: bool, marker_dir: Path, timeouts: str) -> None:
        self.marker_dir = marker_dir
        args = [PYTHON, "-c", CHILD, str(marker_dir), timeouts]
        if terminal:
            pty = pytest.importorskip("pty")
            self.master, slave = pty.openpty()
            self.proc = subprocess.Popen(
                args,
                stdin=slave,
                stdout=slave,
                stderr=subprocess.DEVNULL,
                cwd=REPO_ROOT,
                env=subprocess_env(),
            )
            os.close(slave)
            self.write_fd, self.read_fd = self.master, self.master
        else:
            in_r, in_w = os.pipe()
            out_r, out_w = os.pipe()
            self.proc = subprocess.Popen(
                args,
                stdin=in_r,
                stdout=out_w,
                stderr=subprocess.DEVNULL,
                cwd=REPO_ROOT,
                env=subprocess_env(),
            )
            os.close(in_r)
            os.close(out_w)
            self.write_fd, self.read_fd = in_w, out_r
        self.output = ""
        self.terminal = terminal

    def _read(self) -> None:
        """Add what the child wrote within 0.1 s to ``output``."""
        ready, _, _ = select.select([self.read_fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(self.read_fd, 4096)
            except OSError:
                chunk = b""
            assert chunk, f"child ended early: {self.output!r}"
            self.output += chunk.decode("utf-8", "replace").replace("\r\n", "\n")

    def wait_for(self, text: str, timeout: float = 30) -> None:
        limit = time.monotonic() + timeout
        while text not in self.output:  # bounded by the limit
            assert time.monotonic() < limit, f"never saw {text!r}: {self.output!r}"
            self._read()

    def type(self, keys: str, *, settle: bool = True) -> None:
        """Type ``keys``; on a terminal (with ``settle``), wait until its line discipline has
        taken them (they are echoed), so they are typed-ahead input when the next review shows."""
        seen = len(self.output)
        os.write(self.write_fd, keys.encode())
        if self.terminal and settle:
            limit = time.monotonic() + 30
            while keys not in self.output[seen:]:  # bounded by the limit
                assert time.monotonic() < limit, f"keys never echoed: {self.output!r}"
                self._read()

    def show_next(self, index: int) -> None:
        (self.marker_dir / str(index)).touch()

    def results(self, count: int) -> list[dict[str, Any]]:
        """The first ``count`` decisions the child printed."""
        limit = time.monotonic() + 30
        while self.output.count("RESULT ") < count or not self.output.endswith("\n"):
            assert time.monotonic() < limit, f"too few results: {self.output!r}"  # bounded
            self._read()
        lines = [line for line in self.output.splitlines() if line.startswith("RESULT ")]
        return [json.loads(line[len("RESULT ") :]) for line in lines]

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        for fd in {self.write_fd, self.read_fd}:
            os.close(fd)


Scenario = Callable[[Child], None]


def late_answer_then_enter(child: Child) -> None:
    """Review 0 times out; then ``x`` and Enter (meant for it) arrive before review 1."""
    child.show_next(0)
    child.wait_for("WAITING 1")  # review 0 has timed out
    child.type("x\n")
    child.type("\n")
    child.show_next(1)


def typed_while_the_agent_worked(child: Child) -> None:
    """Enter typed before the first review was shown."""
    child.type("\n")
    child.show_next(0)


def typed_ahead_during_a_review(child: Child) -> None:
    """Review 0 is answered with ``x`` and a reason; extra Enters typed with it."""
    child.show_next(0)
    child.wait_for("> ")
    child.type("x\nwrong file\n\n\n", settle=False)  # echo interleaves with the prompts
    child.wait_for("WAITING 1")
    child.show_next(1)


PIPE_AND_TERMINAL = [False, True]
TERMINAL = [True]  # a pipe in step takes answers given in advance, in order (documented)

SCENARIOS = [
    (late_answer_then_enter, "1,1.5", 1, PIPE_AND_TERMINAL),
    (typed_while_the_agent_worked, "1.5", 0, TERMINAL),
    (typed_ahead_during_a_review, "10,1.5", 1, TERMINAL),
]
CASES = [
    pytest.param(
        scenario,
        timeouts,
        index,
        terminal,
        id=f"{scenario.__name__}-{'terminal' if terminal else 'pipe'}",
    )
    for scenario, timeouts, index, transports in SCENARIOS
    for terminal in transports
]


@pytest.mark.parametrize(("scenario", "timeouts", "index", "terminal"), CASES)
def test_keys_typed_before_a_review_never_answer_it(
    scenario: Scenario, timeouts: str, index: int, terminal: bool, tmp_path: Path
) -> None:
    child = Child(terminal, tmp_path, timeouts)
    try:
        child.wait_for("WAITING 0")
        scenario(child)
        results = child.results(index + 1)
    finally:
        child.close()
    assert results[index] == {
        "decision": "exit_early",
        "reason": f"Review timed out after {timeouts.split(',')[index]}s",
        "timed_out": True,
    }
    if scenario is typed_ahead_during_a_review:
        assert results[0] == {"decision": "exit_early", "reason": "wrong file", "timed_out": False}


def test_answers_piped_in_advance_still_answer_a_sequence_of_reviews(tmp_path: Path) -> None:
    child = Child(False, tmp_path, "10,10")
    try:
        child.wait_for("WAITING 0")
        child.type("c\nx\nnot this one\n")
        child.show_next(0)
        child.show_next(1)
        results = child.results(2)
    finally:
        child.close()
    assert results == [
        {"decision": "continue"},
        {"decision": "exit_early", "reason": "not this one", "timed_out": False},
    ]
