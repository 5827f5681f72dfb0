"""What makes durable runs cheaper and workers busier, and what it must never cost.

- A run's first execution skips DBOS's read before each step (nothing can be recorded yet),
  while an execution that has checkpoints to find (a fork, a resumed run) reads before every
  step and reuses them: no tool runs twice. (A resume after SIGKILL: test_crash_resume.py.)
- A worker's queue poll is woken by new work: a run submitted from another process (Postgres
  notification) or a slot freed by a finished run (in the worker itself) is taken at once, not
  at the next poll. The workers here poll every 60 s, so runs finishing within the tests'
  bounds were taken because they were woken.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _workers import Workers, handled

from agentensemble.durable import DurableClient

READS_APP = """
import json, sys
import sqlalchemy as sa
from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.durable import DurableClient, DurableRuntime
from agentensemble.testing import FunctionChatModel, tool_call

db, log = sys.argv[1], sys.argv[2]

@tool
def note(text: str) -> str:
    \"\"\"Note a text.\"\"\"
    with open(log, "a") as out:
        out.write(text + "\\n")
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

runtime = DurableRuntime(db, poll_interval=0.05)
runtime.register("notes", build)
runtime.launch()
from agentensemble.durable import _dbos
reads = []
@sa.event.listens_for(_dbos.system_engine(), "before_cursor_execute")
def count(conn, cursor, statement, parameters, context, executemany):
    if statement.startswith("SELECT") and "operation_outputs" in statement \\
            and "function_id =" in statement:
        reads.append(statement)  # DBOS's read of one step's checkpoint

first = runtime.run("notes", run_id="r1")
fresh_reads = len(reads)
client = DurableClient(db)
fork = client.fork("r1", from_task=2, new_run_id="r1-fork")
forked = client.result(fork, timeout=60)
print(json.dumps({"outputs": [first.raw, forked.raw], "fresh_reads": fresh_reads,
                  "fork_reads": len(reads) - fresh_reads}))
client.close()
runtime.shutdown()
"""


def test_a_fresh_run_skips_the_reads_a_fork_still_makes_and_no_tool_runs_twice(
    any_database: str, tmp_path: Path
) -> None:
    log = tmp_path / "notes.log"
    done = subprocess.run(
        [sys.executable, "-c", READS_APP, any_database, str(log)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["outputs"] == ["two done", "two done"]
    assert found["fresh_reads"] == 0  # 6 steps, none read: the run had nothing recorded
    # the fork found task one's checkpoints (read, reused) and read before task two's steps too
    assert found["fork_reads"] >= 6
    assert log.read_text().splitlines() == ["one", "two", "two"]  # task one's tool ran once


@pytest.fixture
def slow_pollers(postgres_url: str, tmp_path: Path) -> Iterator[Workers]:
    pool = Workers(postgres_url, tmp_path / "log.txt", QUEUE_APP_POLL="60")
    try:
        yield pool
    finally:
        pool.stop_all()


def test_a_worker_takes_work_when_woken_not_at_its_next_poll(
    slow_pollers: Workers, postgres_url: str, tmp_path: Path
) -> None:
    slow_pollers.start("w1", QUEUE_APP_CONCURRENCY="2")
    client = DurableClient(postgres_url)
    try:
        # submitted from this process: the worker hears of them through Postgres; six runs on
        # two slots: runs 3-6 start as earlier ones finish, each finish waking the worker
        run_ids = [client.submit("record", {"item": f"item{n}"}) for n in range(6)]
        outputs = [client.result(run_id, timeout=45) for run_id in run_ids]
    finally:
        client.close()
    assert [o.raw for o in outputs] == ["done"] * 6
    assert sorted(item for item, _ in handled(tmp_path / "log.txt")) == [
        f"item{n}" for n in range(6)
    ]


WAKE_APP = """
import json, sys
from agentensemble import Ensemble, Task
from agentensemble.durable import DurableRuntime

runtime = DurableRuntime(sys.argv[1], poll_interval=60, worker_concurrency=2)
runtime.register("echo", Ensemble(tasks=[Task(description="Echo {x}",
                                              handler=lambda ctx: ctx.inputs["x"])]))
runtime.launch()
ids = [runtime.submit("echo", {"x": str(i)}) for i in range(6)]
from agentensemble.durable import DurableClient
client = DurableClient(sys.argv[1])
print(json.dumps([client.result(i, timeout=45).raw for i in ids]))
client.close()
runtime.shutdown()
"""


def test_on_sqlite_a_worker_is_woken_by_its_own_submits_and_finished_runs(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", WAKE_APP, f"sqlite:///{tmp_path}/runs.sqlite"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [str(i) for i in range(6)]


CANCEL_APP = """
import json, os, sys, threading, time
from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.durable import DurableRuntime
from agentensemble.testing import FunctionChatModel, tool_call

db, folder = sys.argv[1], sys.argv[2]
log, go = os.path.join(folder, "log"), os.path.join(folder, "go")

@tool
def first() -> str:
    \"\"\"The first call: waits until the test says go.\"\"\"
    open(log, "a").write("first\\n")
    deadline = time.monotonic() + 60
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.01)
    return "first done"

@tool
def second() -> str:
    \"\"\"The second call.\"\"\"
    open(log, "a").write("second\\n")
    return "second done"

def model(messages, tools):
    done = sum(1 for m in messages if m["role"] == "tool")
    return [tool_call("first", {}), tool_call("second", {}), "finished"][done]

def build():
    agent = Agent(role="Worker", goal="Work", tools=[first, second], llm=FunctionChatModel(model))
    return Ensemble(tasks=[Task(description="Work", agent=agent)])

runtime = DurableRuntime(db)
runtime.register("work", build)
runtime.launch()
outcome = []
def run():
    try:
        outcome.append(runtime.run("work", run_id="c1").raw)
    except BaseException as error:
        outcome.append(type(error).__name__)
thread = threading.Thread(target=run)
thread.start()
deadline = time.monotonic() + 60
while not (os.path.exists(log) and open(log).read()) and time.monotonic() < deadline:
    time.sleep(0.01)
runtime.cancel("c1")  # while the first tool call runs
open(go, "w").close()
thread.join(60)
print(json.dumps({"outcome": outcome, "status": runtime.status("c1").status,
                  "log": open(log).read().split()}))
runtime.shutdown()
"""


def test_a_run_cancelled_during_a_step_makes_no_further_call(
    any_database: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CANCEL_APP, any_database, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["log"] == ["first"]  # the second tool never ran
    assert found["status"] == "CANCELLED"
    assert found["outcome"] != ["finished"]
