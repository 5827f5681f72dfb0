"""Reproducible measurements: import cost, framework overhead per model turn, tool concurrency.

Usage: ``make bench`` (or ``python benchmarks/run.py [--write]``). Shared, noisy machines: every
figure is a median of repeated runs taken in one process run, and comparisons are ratios measured
side by side. ``--write`` records the table in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

Row = tuple[str, str, str]

from runtime_bench import SECTIONS as RUNTIME_SECTIONS  # noqa: E402 - beside this file


def _import_seconds(statement: str, repeats: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of ``statement`` in fresh interpreters, bytecode caching allowed.

    CPU time (``time.process_time``) is the figure to compare on a shared machine: it does not
    count the time other processes hold the cores."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    code = (
        "import time; c = time.process_time(); t = time.perf_counter(); "
        + statement
        + "; print(time.perf_counter() - t, time.process_time() - c)"
    )
    walls, cpus = [], []
    for i in range(repeats + 1):
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        if i:  # the first run writes bytecode caches; it is not counted
            wall, cpu = out.stdout.strip().splitlines()[-1].split()
            walls.append(float(wall))
            cpus.append(float(cpu))
    return statistics.median(walls), statistics.median(cpus)


FLOOR = "import pydantic, structlog, tenacity, httpx"
# `import pydantic` is lazy: the model machinery arrives with the first BaseModel import
MODEL_FLOOR = FLOOR + "; from pydantic import BaseModel, Field, ConfigDict, field_validator"
USER_LINE = "from agentensemble import Agent, Ensemble, Task, tool"


def _ratio(ours: list[float], floor: list[float]) -> str:
    """Ratio of the medians, with the spread of the per-round ratios."""
    ratios = [o / f for o, f in zip(ours, floor, strict=True)]
    median = statistics.median(ours) / statistics.median(floor)
    return f"{median:.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"


def bench_import(repeats: int) -> list[Row]:
    statements = {"bare": "import agentensemble", "floor": FLOOR, "user": USER_LINE}
    statements["models"] = MODEL_FLOOR
    wall: dict[str, list[float]] = {key: [] for key in statements}
    cpu: dict[str, list[float]] = {key: [] for key in statements}
    for _ in range(repeats):  # interleaved, so load drift hits all alike
        for key, statement in statements.items():
            sample = _import_seconds(statement, 1)
            wall[key].append(sample[0])
            cpu[key].append(sample[1])
    med = {key: statistics.median(values) for key, values in wall.items()}
    cpu_med = {key: statistics.median(values) for key, values in cpu.items()}
    leaked = subprocess.run(
        [sys.executable, "-c", "import agentensemble, sys; print('litellm' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return [
        ("import agentensemble (median)", f"{med['bare']:.3f} s", "target <= 0.15 s"),
        (
            "import pydantic+structlog+tenacity+httpx",
            f"{med['floor']:.3f} s",
            "floor set by dependencies",
        ),
        (
            "import agentensemble / dependency floor",
            f"{med['bare'] / med['floor']:.2f}x",
            "goal <= 1.25x",
        ),
        (f"`{USER_LINE}` (median)", f"{med['user']:.3f} s", "what a script's first line costs"),
        (
            "the same / dependency floor",
            _ratio(wall["user"], wall["floor"]),
            "goal <= 1.25x; interleaved",
        ),
        (
            "the same / dependency floor, CPU",
            f"{cpu_med['user'] * 1000:.0f} / {cpu_med['floor'] * 1000:.0f} ms = "
            + _ratio(cpu["user"], cpu["floor"]),
            "CPU time: what load does not inflate",
        ),
        (
            "the floor + pydantic's BaseModel",
            f"{med['models']:.3f} s",
            "any pydantic model needs it",
        ),
        (
            f"`{USER_LINE}` / that floor",
            _ratio(wall["user"], wall["models"]),
            "what our own modules add",
        ),
        (
            "the same / that floor, CPU",
            f"{cpu_med['user'] * 1000:.0f} / {cpu_med['models'] * 1000:.0f} ms = "
            + _ratio(cpu["user"], cpu["models"]),
            "CPU time",
        ),
        ("litellm imported by `import agentensemble`", leaked, "must be False"),
    ]


def _median_time(fn: Callable[[], Any], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def bench_overhead(repeats: int, turns: int = 200) -> list[Row]:
    """Framework time per model turn: a tool-calling task of ``turns`` turns on a scripted model,
    against the same scripted model driven directly (the floor)."""
    from agentensemble import Agent, Ensemble, Task, tool
    from agentensemble.testing import ScriptedChatModel, text, tool_call

    @tool
    def echo(value: str) -> str:
        """Echo a value."""
        return value

    def script() -> list[Any]:
        return [*(tool_call("echo", {"value": str(i)}) for i in range(turns - 1)), text("done")]

    def with_framework() -> None:
        model = ScriptedChatModel(script())
        agent = Agent(role="Bench", goal="g", tools=[echo], llm=model, max_iterations=turns)
        Ensemble(tasks=[Task(description="d", agent=agent)]).run()

    def model_only() -> None:
        model = ScriptedChatModel(script())

        async def drive() -> None:
            messages: list[dict[str, Any]] = [{"role": "user", "content": "d"}]
            for _ in range(turns):
                await model.complete(messages, tools=None)

        asyncio.run(drive())

    framework = _median_time(with_framework, repeats) / turns
    floor = _median_time(model_only, repeats) / turns
    overhead = framework - floor
    return [
        (
            f"time per model turn, ensemble + 1 tool call ({turns} turns)",
            f"{framework * 1e3:.3f} ms",
            "",
        ),
        ("time per model turn, scripted model alone", f"{floor * 1e3:.3f} ms", "floor"),
        ("framework overhead per model turn", f"{overhead * 1e3:.3f} ms", "target well under 1 ms"),
    ]


def bench_concurrency(repeats: int) -> list[Row]:
    """Six 0.5 s tools in one model response: they run concurrently."""
    from agentensemble import Agent, Ensemble, Task, tool
    from agentensemble.testing import ScriptedChatModel, text, tool_calls

    @tool
    def slow(n: int) -> str:
        """Sleep half a second."""
        time.sleep(0.5)
        return str(n)

    @tool
    async def slow_async(n: int) -> str:
        """Sleep half a second, asynchronously."""
        await asyncio.sleep(0.5)
        return str(n)

    def run(name: str) -> None:
        model = ScriptedChatModel([tool_calls(*((name, {"n": i}) for i in range(6))), text("done")])
        agent = Agent(role="Bench", goal="g", tools=[slow, slow_async], llm=model)
        Ensemble(tasks=[Task(description="d", agent=agent)]).run()

    sync_s = _median_time(lambda: run("slow"), max(3, repeats // 3))
    async_s = _median_time(lambda: run("slow_async"), max(3, repeats // 3))
    return [
        ("six 0.5 s sync tools in one response", f"{sync_s:.2f} s", "about 0.5 s, not 3 s"),
        ("six 0.5 s async tools in one response", f"{async_s:.2f} s", "about 0.5 s, not 3 s"),
    ]


def bench_pipeline(repeats: int) -> list[Row]:
    """parse JSON -> compute -> format as one ToolPipeline against the same three tools given
    separately: model requests per task and wall time per task, through litellm against the
    local OpenAI-compatible test server (tests/e2e/openai_server.py), answering at once and
    with a simulated model latency."""
    sys.path.insert(0, str(ROOT / "tests" / "e2e"))
    import json

    from openai_server import OpenAIServer

    from agentensemble import LLM, Agent, Ensemble, RetryPolicy, Task, tool
    from agentensemble.tools.pipeline import ToolPipeline

    @tool
    def parse_order(order: str) -> dict[str, list[float]]:
        """Parse an order (JSON text) into line amounts."""
        return {"amounts": [i["price"] * i["qty"] for i in json.loads(order)["items"]]}

    @tool
    def compute_total(amounts: list[float], tax_rate: float = 0.2) -> dict[str, float]:
        """Add up line amounts and tax."""
        subtotal = sum(amounts)
        return {
            "subtotal": subtotal,
            "tax": subtotal * tax_rate,
            "total": subtotal * (1 + tax_rate),
        }

    @tool
    def format_invoice(subtotal: float, tax: float, total: float) -> str:
        """Format totals as one line."""
        return f"Subtotal {subtotal:.2f} + tax {tax:.2f} = total {total:.2f}"

    order = json.dumps({"items": [{"price": 1.5, "qty": 4}, {"price": 4.0, "qty": 1}]})
    steps = [
        ("parse_order", json.dumps({"order": order})),
        ("compute_total", '{"amounts": [6.0, 4.0]}'),
        ("format_invoice", '{"subtotal": 10.0, "tax": 2.0, "total": 12.0}'),
    ]
    pipeline = ToolPipeline([parse_order, compute_total, format_invoice], name="invoice")

    def run(server: OpenAIServer, separate: bool, latency: float) -> tuple[int, float]:
        server.reset()
        if separate:
            for call in steps:
                server.push_tool_calls([call], delay=latency)
        else:
            server.push_tool_calls([("invoice", {"input": order})], delay=latency)
        server.push_text("Subtotal 10.00 + tax 2.00 = total 12.00", delay=latency)
        llm = LLM(
            model="openai/test-model",
            api_base=server.base_url,
            api_key="sk-test",
            retry_policy=RetryPolicy(max_attempts=1),
        )
        tools: list[Any] = [parse_order, compute_total, format_invoice] if separate else [pipeline]
        agent = Agent(role="Clerk", goal="Write invoices", tools=tools, llm=llm)
        started = time.perf_counter()
        task = Task(description=f"Invoice this order: {order}", agent=agent)
        output = Ensemble(tasks=[task]).run().task_outputs[0]
        elapsed = time.perf_counter() - started
        if not output.tool_calls or not all(call.is_success for call in output.tool_calls):
            raise RuntimeError(f"pipeline benchmark: a tool call failed: {output.tool_calls}")
        return len(server.requests), elapsed

    rows: list[Row] = []
    with OpenAIServer() as server:
        run(server, separate=False, latency=0.0)  # warm-up: imports litellm, opens connections
        for latency, times in ((0.0, repeats), (0.1, max(3, repeats // 3))):
            measured: dict[bool, tuple[int, float]] = {}
            for separate in (False, True):
                samples = [run(server, separate, latency) for _ in range(times)]
                measured[separate] = (samples[-1][0], statistics.median(s for _, s in samples))
            (pipe_n, pipe_s), (sep_n, sep_s) = measured[False], measured[True]
            where = "local server" + (f", {latency * 1e3:.0f} ms model latency" if latency else "")
            if not latency:
                rows += [
                    ("model requests: 3-step pipeline, one task", str(pipe_n), "call + answer"),
                    (
                        "model requests: same 3 tools given separately",
                        str(sep_n),
                        "3 calls + answer",
                    ),
                ]
            rows += [
                (f"wall time per task, pipeline ({where})", f"{pipe_s * 1e3:.1f} ms", ""),
                (
                    f"wall time per task, separate tools ({where})",
                    f"{sep_s * 1e3:.1f} ms",
                    f"{sep_s / pipe_s:.1f}x the pipeline",
                ),
            ]
    return rows


def bench_llm(repeats: int, calls: int = 100) -> list[Row]:
    """``LLM.complete`` against raw ``litellm.acompletion``, same calls to the same local server:
    what our model layer (retry policy, conversion, guard) adds per request."""
    sys.path.insert(0, str(ROOT / "tests" / "e2e"))
    from openai_server import OpenAIServer

    from agentensemble import LLM, RetryPolicy
    from agentensemble.llm._litellm import load_litellm

    litellm = load_litellm()  # tamed exactly as our LLM uses it: same transport for both
    messages = [{"role": "user", "content": "Say hi"}]

    with OpenAIServer() as server:
        server.set_responder(lambda request: "hi")
        llm = LLM(
            model="openai/test-model",
            api_base=server.base_url,
            api_key="sk-test",
            retry_policy=RetryPolicy(max_attempts=1),
        )

        async def ours() -> None:
            for _ in range(calls):
                await llm.complete(messages)

        async def raw() -> None:
            for _ in range(calls):
                await litellm.acompletion(
                    model="openai/test-model",
                    messages=messages,
                    api_base=server.base_url,
                    api_key="sk-test",
                    max_retries=0,
                    timeout=60.0,
                )

        asyncio.run(ours())  # warm-up: connections, caches
        ours_s, raw_s = [], []
        for _ in range(max(3, repeats // 2)):  # interleaved, so load drift hits both alike
            ours_s.append(_median_time(lambda: asyncio.run(ours()), 1) / calls)
            raw_s.append(_median_time(lambda: asyncio.run(raw()), 1) / calls)
    ours_m, raw_m = statistics.median(ours_s), statistics.median(raw_s)
    return [
        ("raw litellm.acompletion per request (local server)", f"{raw_m * 1e3:.2f} ms", ""),
        ("LLM.complete per request (local server)", f"{ours_m * 1e3:.2f} ms", ""),
        (
            "LLM layer overhead per request",
            f"{(ours_m - raw_m) * 1e3:.2f} ms",
            f"ratio {ours_m / raw_m:.2f}x raw litellm",
        ),
    ]


SECTIONS: dict[str, Callable[[int], list[Row]]] = {
    "import": bench_import,
    "overhead": bench_overhead,
    "concurrency": bench_concurrency,
    "llm": bench_llm,
    "pipeline": bench_pipeline,
    **RUNTIME_SECTIONS,
}


def render(rows: list[Row], seconds: float) -> str:
    head = (
        f"Measured {date.today().isoformat()} on {platform.machine()}, Python "
        f"{platform.python_version()}, {os.cpu_count()} cores; run took {seconds:.0f} s.\n\n"
        "| measurement | median | note |\n|---|---|---|\n"
    )
    return head + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--only", choices=sorted(SECTIONS), action="append")
    parser.add_argument("--write", action="store_true", help="record in benchmarks/RESULTS.md")
    args = parser.parse_args()
    started = time.perf_counter()
    rows: list[Row] = []
    for name, bench in SECTIONS.items():
        if args.only is None or name in args.only:
            rows += bench(args.repeats)
    table = render(rows, time.perf_counter() - started)
    print(table)
    if args.write:
        results = ROOT / "benchmarks" / "RESULTS.md"
        kept = results.read_text().partition("\n## ") if results.exists() else ("", "", "")
        results.write_text(  # the sections after the table (notes, peers) are kept
            "# Benchmark results\n\nRecorded by `python benchmarks/run.py --write`.\n\n"
            + table
            + (f"\n## {kept[2]}" if kept[1] else "")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
