"""A durable run with task memory, killed with SIGKILL and resumed: the resumed run shows the
agent the context recalled before the crash (a checkpointed step, whatever the store holds now)
and does not write again what it had written.

The app runs in a real subprocess against the local OpenAI-compatible server, which kills it
when task two's request arrives (after task one's output was written to memory, and after task
two's recall). Between the crash and the restart the test adds an entry that task two's search
would now rank first.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from agentensemble.memory import SQLiteMemory
from agentensemble.testing import OpenAICompatibleServer
from agentensemble.testing.openai_server import TextReply

APP = Path(__file__).with_name("_memory_app.py")
REPO_ROOT = Path(__file__).resolve().parents[2]  # this tree's code in the subprocess
ADDED_AFTER_CRASH = "The kettle reply must now offer a polished kettle discount"


class KillAtTaskTwo:
    """Answers each task; SIGKILLs the app when task two's first request arrives."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.bodies: list[dict[str, Any]] = []
        self.killed = False
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> TextReply:
        with self._lock:
            self.bodies.append(body)
            task_two = "Task two" in str(body["messages"][-1]["content"])
            kill = task_two and not self.killed
            self.killed = self.killed or kill
        if kill:
            os.kill(int((self.workdir / "pid").read_text()), signal.SIGKILL)
            return TextReply("never delivered: the client is dead", delay=1.0)
        return TextReply("two: the kettle reply, polished" if task_two else "one: kettle drafted")


def run_app(db: str, server: OpenAICompatibleServer, workdir: Path) -> Any:
    return subprocess.run(
        [sys.executable, str(APP), db, server.base_url, str(workdir), "memory-run"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO_ROOT)},
    )


def memory_block(body: dict[str, Any]) -> str:
    (block,) = [
        str(m["content"])
        for m in body["messages"]
        if m["role"] == "user" and "## Retrieved memory" in str(m["content"])
    ]
    return block


def test_a_resumed_run_sees_the_recalled_context_of_before_the_crash_and_writes_once(
    tmp_path: Path,
) -> None:
    store = SQLiteMemory(tmp_path / "memory.sqlite")
    store.add("kettle", "The kettle ships on Monday")
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    with OpenAICompatibleServer() as server:
        model = KillAtTaskTwo(tmp_path)
        server.set_responder(model)
        crashed = run_app(db, server, tmp_path)
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
        before_crash = memory_block(model.bodies[-1])
        store.add("kettle", ADDED_AFTER_CRASH)  # the store changes while the run is down

        resumed = run_app(db, server, tmp_path)

    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.strip().splitlines()[-1]) == [
        "one: kettle drafted",
        "two: the kettle reply, polished",
    ]
    # task one was answered once (its checkpoint replayed); task two's request was resent
    assert len(model.bodies) == 3
    assert "one: kettle drafted" in before_crash  # task one's output, recalled for task two
    assert memory_block(model.bodies[-1]) == before_crash  # the checkpointed recall
    assert ADDED_AFTER_CRASH not in memory_block(model.bodies[-1])
    texts = [entry.text for entry in store.entries("kettle")]
    assert texts == [
        "The kettle ships on Monday",
        "one: kettle drafted",  # written before the crash, not again on replay
        ADDED_AFTER_CRASH,
        "two: the kettle reply, polished",
    ]
    # a fresh run does search the store as it is now
    found = store.search("kettle", "polish the kettle reply")
    assert ADDED_AFTER_CRASH in [entry.text for entry in found]
