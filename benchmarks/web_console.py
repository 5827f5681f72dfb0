"""The web console under load: 20 runs at once streaming their events to one console.

Usage: ``python benchmarks/web_console.py [--runs 20] [--write]``. The console runs in its own
process (``agentensemble serve``) so its CPU time can be read from /proc; this process runs the
ensembles (each in a thread, through ``astream``, so every word is a ``TokenDelta``), each with
its own ``WebConsole`` listener, and a page-like reader of the live stream (``/api/stream``).
Delivery latency is the time from the event's creation on the run's thread (its ``ts``) to its
arrival at the reader: the listener's queue and batching, the POST, the console, the SSE hop.
``--write`` records the figures in the "Web console" section of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import queue
import secrets
import statistics
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentensemble import Agent, Ensemble, Task, tool  # noqa: E402
from agentensemble.testing import ScriptedChatModel, tool_call  # noqa: E402
from agentensemble_web import WebConsole  # noqa: E402

BEGIN, END = "<!-- web-console:begin -->", "<!-- web-console:end -->"
TASKS_PER_RUN = 3
WORDS = " ".join(f"word{i}" for i in range(60))


@tool
def lookup(topic: str) -> str:
    """Look a topic up.

    Args:
        topic: what to look up
    """
    return f"notes on {topic}"


def _ensemble(listener: WebConsole) -> Ensemble:
    script: list[Any] = []
    for index in range(TASKS_PER_RUN):
        script += [tool_call("lookup", {"topic": f"t{index}"}), WORDS]
    agent = Agent(role="Writer", goal="Write", tools=[lookup], llm=ScriptedChatModel(script))
    tasks = [
        Task(description=f"Part {i}", expected_output="text", agent=agent)
        for i in range(TASKS_PER_RUN)
    ]
    return Ensemble(tasks=tasks, listeners=[listener])


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start_console(token: str) -> tuple[subprocess.Popen[str], str]:
    env = dict(os.environ, AGENTENSEMBLE_WEB_TOKEN=token, PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "agentensemble", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if "open in a browser:" in line:
            return process, line.split(":", 1)[1].strip().split("/login", 1)[0]
    raise RuntimeError("the console did not start")


def _reader(
    url: str, token: str, arrivals: queue.Queue[tuple[float, float]], ready: threading.Event
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.stream("GET", f"{url}/api/stream", headers=headers, timeout=60.0) as answer:
        ready.set()
        for line in answer.iter_lines():
            if line.startswith("data: "):
                message = json.loads(line[6:])
                if message["kind"] == "event":
                    arrivals.put((time.time(), float(message["event"]["ts"])))


def _run_all(url: str, token: str, runs: int, results: Any) -> None:
    """In a child process: ``runs`` ensembles at once, each reporting to the console."""
    listeners = [WebConsole(url, token) for _ in range(runs)]
    barrier = threading.Barrier(runs)

    def one(listener: WebConsole) -> None:
        async def go() -> None:
            async for _ in _ensemble(listener).astream():
                pass

        barrier.wait(timeout=30)
        asyncio.run(go())

    threads = [threading.Thread(target=one, args=(listener,)) for listener in listeners]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    for listener in listeners:
        listener.flush(30)
    results.put(
        (
            sum(listener.delivered for listener in listeners),
            sum(listener.dropped for listener in listeners),
            sum(listener.failed_posts for listener in listeners),
        )
    )


def measure(runs: int) -> tuple[list[tuple[str, str, str]], float]:
    token = secrets.token_urlsafe(16)
    process, url = _start_console(token)
    arrivals: queue.Queue[tuple[float, float]] = queue.Queue()
    ready = threading.Event()
    threading.Thread(target=_reader, args=(url, token, arrivals, ready), daemon=True).start()
    assert ready.wait(10)
    results: Any = multiprocessing.get_context("fork").Queue()
    cpu_before = _cpu_seconds(process.pid)
    started = time.perf_counter()
    child = multiprocessing.get_context("fork").Process(
        target=_run_all, args=(url, token, runs, results)
    )
    child.start()
    sent, dropped, failed = results.get(timeout=300)
    child.join(timeout=30)
    latencies: list[float] = []
    deadline = time.monotonic() + 30
    while len(latencies) < sent and time.monotonic() < deadline:
        try:
            got, ts = arrivals.get(timeout=1)
        except queue.Empty:
            continue
        latencies.append(got - ts)
    wall = time.perf_counter() - started
    cpu = _cpu_seconds(process.pid) - cpu_before
    process.terminate()
    process.wait(timeout=10)
    q = statistics.quantiles(latencies, n=20)
    rows = [
        (
            "concurrent runs / events delivered to the page",
            f"{runs} / {len(latencies)}",
            f"{sent} accepted, {dropped} dropped, {failed} failed posts",
        ),
        (
            "event delivery latency, p50",
            f"{statistics.median(latencies) * 1000:.1f} ms",
            "event created -> received by the page",
        ),
        ("event delivery latency, p95", f"{q[18] * 1000:.1f} ms", ""),
        ("event delivery latency, max", f"{max(latencies) * 1000:.1f} ms", ""),
        (
            "console server CPU",
            f"{cpu:.2f} s over {wall:.1f} s",
            f"{cpu / wall * 100:.0f}% of one core; {cpu / max(1, sent) * 1e6:.0f} us per event",
        ),
    ]
    return rows, wall


def main() -> None:
    parser = argparse.ArgumentParser(description="web console load benchmark")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    rows, wall = measure(args.runs)
    table = "\n".join(
        [
            BEGIN,
            "## Web console",
            "",
            "Recorded by `python benchmarks/web_console.py --write`.",
            "",
            f"Measured {date.today()} on {platform.machine()}, Python "
            f"{platform.python_version()}, {os.cpu_count()} cores; {args.runs} runs of "
            f"{TASKS_PER_RUN} tasks (a tool call and a 60-word streamed answer each) through "
            "`astream`, all at once: the runs in one process, the page reader in another, "
            f"the console in a third; run took {wall:.0f} s.",
            "",
            "| measurement | value | note |",
            "|---|---|---|",
            *(f"| {a} | {b} | {c} |" for a, b, c in rows),
            "",
            "- Latency includes the listener's queue and batching (a batch leaves as soon",
            "  as the sender thread is free), the POST, the console's bookkeeping and the SSE",
            "  hop. The runs compete for the same 2 cores, so these are upper bounds: the",
            "  scripted runs answer instantly, so the whole load (about 4,000 events) arrives",
            "  as a burst of about a second. Server CPU is read from /proc (10 ms ticks). The",
            "  page gets every event: the stream sends what is queued in one write, and",
            "  streamed words do not resend the run's row.",
            END,
            "",
        ]
    )
    print(table)
    if args.write:
        results = ROOT / "benchmarks" / "RESULTS.md"
        text = results.read_text(encoding="utf-8")
        if BEGIN in text and END in text:
            text = text[: text.index(BEGIN)] + table + text[text.index(END) + len(END) + 1 :]
        else:
            text = text.rstrip("\n") + "\n\n" + table
        results.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
