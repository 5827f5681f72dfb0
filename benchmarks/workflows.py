"""Workflow measurements on the local OpenAI-compatible server (tests/e2e/openai_server.py).

Usage: ``python benchmarks/workflows.py [--repeats N] [--write]``. Every model call is one
request answered after a fixed latency. Figures are medians of repeated runs taken interleaved
(one task, PARALLEL, SEQUENTIAL, diamond in turn), so load drift hits all alike; ratios compare
runs of the same round. ``--write`` records the table in the workflows section of
``benchmarks/RESULTS.md`` (between its markers; the rest of the file is left alone).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import sys
import threading
import time
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from openai_server import OpenAIServer, Reply, TextReply, ToolCallsReply  # noqa: E402

from agentensemble import LLM, Agent, Ensemble, RateLimit, Task, Workflow  # noqa: E402

LATENCY = 0.2
BEGIN, END = "<!-- workflows:begin -->", "<!-- workflows:end -->"
Row = tuple[str, str, str]


def llm_for(server: OpenAIServer, **settings: Any) -> LLM:
    return LLM(model="openai/bench", api_base=server.base_url, api_key="sk-bench", **settings)


def timed(ensemble: Ensemble) -> float:
    started = time.perf_counter()
    ensemble.run()
    return time.perf_counter() - started


def independent(llm: LLM, count: int, workflow: Workflow) -> Ensemble:
    tasks = [Task(description=f"task {i}") for i in range(count)]
    return Ensemble(tasks=tasks, llm=llm, workflow=workflow)


def diamond(llm: LLM) -> Ensemble:
    top = Task(description="top")
    middle = [Task(description=f"middle {i}", context=[top]) for i in range(3)]
    bottom = Task(description="bottom", context=middle)
    return Ensemble(tasks=[top, *middle, bottom], llm=llm, workflow=Workflow.PARALLEL)


def bench_graphs(repeats: int) -> list[Row]:
    with OpenAIServer() as server:
        server.set_responder(lambda body: TextReply("done", delay=LATENCY))
        llm = llm_for(server, timeout=30)
        timed(independent(llm, 1, Workflow.SEQUENTIAL))  # warm-up: imports litellm
        one, par, seq, dia = [], [], [], []
        for _ in range(repeats):
            one.append(timed(independent(llm, 1, Workflow.SEQUENTIAL)))
            par.append(timed(independent(llm, 8, Workflow.PARALLEL)))
            seq.append(timed(independent(llm, 8, Workflow.SEQUENTIAL)))
            dia.append(timed(diamond(llm)))
    base = statistics.median(one)

    def ratio(samples: list[float]) -> float:
        return statistics.median(s / o for s, o in zip(samples, one, strict=True))

    return [
        ("one task, one 200 ms model call", f"{base:.3f} s", "the unit"),
        ("8 independent tasks, PARALLEL", f"{statistics.median(par):.3f} s",
         f"{ratio(par):.2f}x one task (target <= 1.3x)"),
        ("8 independent tasks, SEQUENTIAL", f"{statistics.median(seq):.3f} s",
         f"{ratio(seq):.2f}x one task (about 8x)"),
        ("diamond 1 -> 3 -> 1, PARALLEL", f"{statistics.median(dia):.3f} s",
         f"{ratio(dia):.2f}x one task (target <= 3.3x)"),
    ]  # fmt: skip


def bench_hierarchical(repeats: int) -> list[Row]:
    plan = [("Researcher", "facts"), ("Analyst", "meaning"), ("Writer", "report")]

    def responder(body: dict[str, Any]) -> Reply:
        system = str(body["messages"][0]["content"])
        if system.startswith("You are Manager."):
            turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
            if turn < len(plan):
                role, what = plan[turn]
                args = json.dumps({"agent_role": role, "instructions": what})
                return ToolCallsReply((("delegate_task", args),))
            return TextReply("final")
        return TextReply("worker answer")

    with OpenAIServer() as server:
        server.set_responder(responder)
        agents = [Agent(role=r, goal="help") for r, _ in plan]
        ensemble = Ensemble(
            tasks=[Task(description="A report")],
            agents=agents,
            workflow=Workflow.HIERARCHICAL,
            llm=llm_for(server),
        )
        result = ensemble.run()
        requests = len(server.requests)
    worker_turns = sum(o.llm_calls for o in result.task_outputs)
    manager_turns = len(plan) + 1
    return [
        ("hierarchical, 3 delegations: requests at the server", str(requests),
         f"manager turns {manager_turns} + worker turns {worker_turns} = "
         f"{manager_turns + worker_turns}"),
    ]  # fmt: skip


def bench_rate_limit(repeats: int) -> list[Row]:
    starts: list[float] = []
    lock = threading.Lock()

    def responder(body: dict[str, Any]) -> Reply:
        with lock:
            starts.append(time.monotonic())
        return TextReply("done")

    with OpenAIServer() as server:
        server.push_text("warm")
        Ensemble(tasks=[Task(description="warm up")], llm=llm_for(server)).run()
        server.set_responder(responder)
        limited = llm_for(server, rate_limit=RateLimit(requests_per_minute=60))
        tasks = [Task(description=f"job {i}") for i in range(10)]
        Ensemble(tasks=tasks, llm=limited, workflow=Workflow.PARALLEL).run()
    offsets = [s - starts[0] for s in sorted(starts)]
    gaps = [b - a for a, b in itertools.pairwise(offsets)]
    return [
        ("rate limit 60/min, 10 concurrent tasks: request starts",
         " ".join(f"{o:.2f}" for o in offsets) + " s", "burst of one, then one a second"),
        ("rate limit 60/min: median gap after the burst", f"{statistics.median(gaps):.3f} s",
         "about 1 s"),
    ]  # fmt: skip


def render(rows: list[Row], seconds: float) -> str:
    head = (
        f"Measured {date.today().isoformat()} on {platform.machine()}, Python "
        f"{platform.python_version()}, {os.cpu_count()} cores; run took {seconds:.0f} s "
        f"(`python benchmarks/workflows.py --write`).\n\n"
        "| measurement | median | note |\n|---|---|---|\n"
    )
    return head + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows) + "\n"


def record(table: str) -> None:
    path = ROOT / "benchmarks" / "RESULTS.md"
    text = path.read_text()
    section = f"{BEGIN}\n## Workflows\n\n{table}{END}"
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + section + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="record in benchmarks/RESULTS.md")
    args = parser.parse_args()
    started = time.perf_counter()
    rows = bench_graphs(args.repeats) + bench_hierarchical(1) + bench_rate_limit(1)
    table = render(rows, time.perf_counter() - started)
    print(table)
    if args.write:
        record(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
