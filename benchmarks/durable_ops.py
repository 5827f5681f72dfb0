"""Durable runs for an operator: what a fork saves against a full rerun, how many database bytes a
run and a turn cost, how fast retention deletes, and that a worker's database stops growing once
retention is set.

    python benchmarks/durable_ops.py [--runs 60] [--write]

One process, a SQLite database in a temporary folder, handler-free ensembles whose model answers
through a FunctionChatModel after ``--model-ms`` (a stand-in for a real model's latency), so the
fork's saving is the requests it does not make. ``--write`` replaces the "Durable runs for an
operator" section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.durable import DurableClient, DurableRuntime
from agentensemble.llm.types import ChatResponse
from agentensemble.testing.models import FunctionChatModel, tool_call

RESULTS = Path(__file__).with_name("RESULTS.md")
START, END = "<!-- durable-ops:start -->", "<!-- durable-ops:end -->"
TASKS, TURNS = 4, 3  # turns per task: TURNS - 1 tool calls, then the answer


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key} " * 8


REQUESTS = [0]  # model requests made in this process


def build(model_ms: float) -> Any:
    def answer(messages: list[Any], tools: Any) -> ChatResponse | str:
        REQUESTS[0] += 1
        time.sleep(model_ms / 1000)
        calls = sum(1 for m in messages if m.get("role") == "tool")
        if calls < TURNS - 1:
            return tool_call("lookup", {"key": f"k{calls}"})
        return "an answer of a few words, as a model would give " * 4

    def factory() -> Ensemble:
        agent = Agent(role="Analyst", goal="Answer", tools=[lookup], llm=FunctionChatModel(answer))
        tasks = [Task(description=f"Step {i} of {{topic}}", agent=agent) for i in range(TASKS)]
        return Ensemble(tasks=tasks)

    return factory


def finished_after(client: DurableClient, run_id: str, began: float) -> float:
    """Seconds from ``began`` until the database says ``run_id`` finished (checked every 10 ms,
    so a waiter's own slower polling is not counted)."""
    while client.status(run_id) not in ("SUCCESS", "ERROR"):
        time.sleep(0.01)
    return time.perf_counter() - began


def used_bytes(path: Path) -> int:
    """Bytes the database's pages hold (free pages not counted: SQLite reuses them)."""
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        free = connection.execute("PRAGMA freelist_count").fetchone()[0]
        size = connection.execute("PRAGMA page_size").fetchone()[0]
    return int((pages - free) * size)


def measure(runs: int, model_ms: float) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="durable-ops-") as folder:
        path = Path(folder) / "runs.sqlite"
        url = f"sqlite:///{path}"
        runtime = DurableRuntime(url, poll_interval=0.05)  # a fork waits for a queue poll
        runtime.register("analysis", build(model_ms))
        runtime.launch()
        client = DurableClient(url)
        try:
            runtime.run("analysis", {"topic": "warm-up"}, run_id="warm-up")
            before = used_bytes(path)
            full: list[float] = []
            REQUESTS[0] = 0
            for i in range(runs):  # queued, as a fork is: both wait for a poll of the queue
                began = time.perf_counter()
                runtime.submit("analysis", {"topic": f"t{i}"}, run_id=f"run-{i}")
                full.append(finished_after(client, f"run-{i}", began))
            grown = used_bytes(path) - before
            full_requests = REQUESTS[0] / runs
            turns = runs * TASKS * TURNS
            rows.append(("database bytes per run", f"{grown / runs / 1024:.1f} KiB",
                         f"{TASKS} tasks x {TURNS} turns; {runs} runs"))  # fmt: skip
            rows.append(("database bytes per model turn", f"{grown / turns:.0f} B",
                         "a turn and its tool call, with inputs and outputs"))  # fmt: skip
            forks: list[float] = []
            REQUESTS[0] = 0
            for i in range(min(runs, 10)):
                began = time.perf_counter()
                fork = client.fork(f"run-{i}", from_task=TASKS)  # rerun the last task only
                forks.append(finished_after(client, fork, began))
            fork_requests = REQUESTS[0] / len(forks)
            rows.append(("full run, submitted to finished",
                         f"{statistics.median(full) * 1000:.0f} ms",
                         f"{full_requests:.0f} model requests of {model_ms:.0f} ms"))  # fmt: skip
            rows.append(("fork from the last task, forked to finished",
                         f"{statistics.median(forks) * 1000:.0f} ms",
                         f"{statistics.median(forks) / statistics.median(full):.2f}x a full run; "
                         f"{fork_requests:.0f} model requests (the other {TASKS - 1} tasks "
                         "reused); both wait for a poll of the queue (0.05 s)"))  # fmt: skip
            began = time.perf_counter()
            removed = client.prune(keep_last=0)
            took = time.perf_counter() - began
            rows.append(("retention: prune every finished run", f"{removed / took:.0f} runs/s",
                         f"{removed} runs in {took:.2f} s"))  # fmt: skip
            sizes = []
            for batch in range(5):  # a worker with retention keep_last=runs: size levels off
                for i in range(runs):
                    runtime.run("analysis", {"topic": "x"}, run_id=f"b{batch}-{i}")
                client.prune(keep_last=runs)
                sizes.append(os.path.getsize(path) // 1024)
            shown = " / ".join(str(size) for size in sizes) + " KiB"
            rows.append(("file size after each batch, retention on", shown,
                         f"5 batches of {runs} runs, keep_last={runs}"))  # fmt: skip
        finally:
            client.close()
            runtime.shutdown()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--model-ms", type=float, default=100.0)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    rows = measure(args.runs, args.model_ms)
    load = os.getloadavg()[0]
    header = (
        f"Measured {date.today()} on {platform.machine()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores, load average {load:.1f} at the end; run took "
        f"{time.perf_counter() - began:.0f} s (`python benchmarks/durable_ops.py --runs "
        f"{args.runs} --model-ms {args.model_ms:g}`)."
    )
    table = ["| measurement | value | note |", "|---|---|---|"]
    table += [f"| {name} | {value} | {note} |" for name, value, note in rows]
    title = "## Durable runs for an operator (time travel, retention)"
    section = "\n".join([START, title, "", header, "", *table, "", END])
    print(section)
    if args.write:
        text = RESULTS.read_text()
        if START in text:
            text = text[: text.index(START)] + section + text[text.index(END) + len(END) :]
        else:
            text = text.rstrip() + "\n\n" + section + "\n"
        RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
