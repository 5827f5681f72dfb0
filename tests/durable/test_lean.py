"""The work DBOS does per step that changes nothing, left out (``durable/_lean.py``), and what
must stay: a fresh run's stages with no work run in place (DBOS's names for them still
recognised, so a DBOS upgrade that renames them is noticed here), a resumed execution still
reads in a thread, and every checkpoint is stamped by the database's clock at its write."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from agentensemble.durable import _lean

LEAN_APP = """
import collections, json, sys, time
import sqlalchemy as sa
from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.durable import DurableClient, DurableRuntime, _lean
from agentensemble.testing import FunctionChatModel, tool_call

db = sys.argv[1]
ran = []

@tool
def note(text: str) -> str:
    \"\"\"Note a text.\"\"\"
    ran.append(text)
    return "noted " + text

def writer(messages, tools):
    task = "one" if "one" in str(messages[1]["content"]) else "two"
    if messages[-1]["role"] == "tool":
        return task + " done"
    return tool_call("note", {"text": task})

def build():
    agent = Agent(role="Writer", goal="Note", tools=[note], llm=FunctionChatModel(writer))
    return Ensemble(tasks=[Task(description="Task one", agent=agent),
                           Task(description="Task two", agent=agent)])

stages = collections.Counter()
original = _lean.runs_in_place
def counted(func):
    found = original(func)
    stages[(func.__qualname__, found)] += 1
    return found
_lean.runs_in_place = counted

runtime = DurableRuntime(db, poll_interval=0.05)
runtime.register("notes", build)
runtime.launch()
first = runtime.run("notes", run_id="r1")
fresh = dict((f"{name}|{inline}", n) for (name, inline), n in stages.items())
stages.clear()
client = DurableClient(db)
forked = client.result(client.fork("r1", from_task=2, new_run_id="r1-fork"), timeout=60)
resumed = dict((f"{name}|{inline}", n) for (name, inline), n in stages.items())
from dbos._dbos import _get_dbos_instance
sys_db = _get_dbos_instance()._sys_db
clock = str(sys_db._now_ms_sql().compile(dialect=sys_db.engine.dialect)).lower()
with sys_db.engine.connect() as connection:
    stamps = [row[0] for row in connection.execute(sa.text(
        "SELECT retention_timestamp FROM operation_outputs WHERE workflow_uuid = 'r1'"))]
print(json.dumps({"outputs": [first.raw, forked.raw], "fresh": fresh, "resumed": resumed,
                  "ran": ran, "clock": clock, "stamps": stamps,
                  "same": sys_db._now_ms_sql() is sys_db._now_ms_sql()}))
client.close()
runtime.shutdown()
"""

CHECK = "invoke_step.<locals>.check_existing_result"
NEXT = "Pending.then.<locals>.<lambda>.<locals>.<lambda>"


def test_a_fresh_run_does_its_steps_stages_in_place_and_a_resumed_one_reads_in_a_thread(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", LEAN_APP, f"sqlite:///{tmp_path}/runs.sqlite"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["outputs"] == ["two done", "two done"]
    assert found["ran"] == ["one", "two", "two"]  # the fork reused task one's tool call
    # 6 steps (2 tasks x a model turn, a tool call, a model turn): DBOS still names these
    # stages as _lean expects, and in a fresh execution none of them went to a thread
    assert found["fresh"].get(f"{CHECK}|True", 0) >= 6, found["fresh"]
    assert found["fresh"].get(f"{NEXT}|True", 0) >= 6, found["fresh"]
    assert f"{CHECK}|False" not in found["fresh"], found["fresh"]
    # the fork has checkpoints to find: each read went to a thread, as DBOS does it
    assert found["resumed"].get(f"{CHECK}|False", 0) >= 6, found["resumed"]
    assert f"{CHECK}|True" not in found["resumed"], found["resumed"]
    # the clock is built once, and it is the database's, evaluated at each write
    assert found["same"] is True
    assert "strftime" in found["clock"] or "unixepoch" in found["clock"]
    assert len(found["stamps"]) >= 6 and all(stamp and stamp > 0 for stamp in found["stamps"])


def test_only_stages_known_to_carry_no_work_run_in_place() -> None:
    def check_existing_result() -> None:  # DBOS's read, outside a fresh execution
        return None

    check_existing_result.__qualname__ = CHECK
    assert _lean.runs_in_place(check_existing_result) is False

    def anything() -> None:
        return None

    assert _lean.runs_in_place(anything) is False
    nxt = lambda: None  # noqa: E731
    nxt.__qualname__ = NEXT
    assert _lean.runs_in_place(nxt) is True

    async def hop() -> tuple[str, str]:
        import threading

        here = threading.current_thread().name
        there = await _lean._to_thread(lambda: threading.current_thread().name)
        inline = await _lean._to_thread(nxt)
        assert inline is None
        return here, there

    here, there = asyncio.run(hop())
    assert here != there  # anything not recognised still goes to a thread


def test_dbos_still_sees_asyncio_with_our_to_thread_only() -> None:
    from dbos import _outcome

    _lean.install_hops()
    _lean.install_hops()  # idempotent
    assert isinstance(_outcome.asyncio, _lean._Asyncio)
    assert _outcome.asyncio.to_thread is _lean._to_thread
    assert _outcome.asyncio.CancelledError is asyncio.CancelledError
    assert _outcome.asyncio.sleep is asyncio.sleep
