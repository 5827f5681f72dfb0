"""Evaluations at concurrency: ``aevaluate`` over N cases against N plain runs at once.

Usage: ``python benchmarks/evals_concurrency.py [--cases 100 1000] [--delay 0.2]
[--variants ...] [--profile DIR]``.

- **The server**: a recording OpenAI-compatible server in its own process (asyncio, 127.0.0.1,
  keep-alive), every answer after ``--delay`` seconds: a call of the job's one tool when the
  request's last message is not a tool result, the final text when it is. It counts the requests
  it got (``GET /stats``): every variant is checked to have sent exactly two a run.
- **The job**: one agent with one tool (``lookup``), two model calls a run (the job of
  ``benchmarks/concurrency.py``).
- **Variants**, each in a fresh child process (so peak memory is its own): ``plain`` (N
  ``arun()`` of one ``Ensemble`` at once: the reference), ``evaluate`` (``aevaluate`` of the same
  ensemble over N cases, ``max_concurrency=N``, two evaluators a case), ``evaluate-factory`` (the
  same with a factory making a fresh ensemble a run, as docs/evals.md recommends) and
  ``evaluate-bounded`` (``max_concurrency=100``: throughput is then bounded by 100 runs per
  run's latency). Each child warms up with three runs, then measures wall time, runs per
  second, its own CPU per run (``time.process_time``) and peak RSS (VmHWM reset after the warm-up).
- ``--rounds R`` measures every variant R times, round by round (so load drift on a shared
  machine hits every variant alike); the table gives each variant's median round and the range.
- Ratios evaluate/plain (of the medians) are measured in one run, with ``uptime``'s load.
- ``--profile DIR``: after its measured row, each evaluate variant runs once more in a child of
  its own under cProfile (``DIR/<variant>-N.txt``); the profiler's cost stays out of the table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared server, beside it
from _measure import measured
from _recording_server import RecordingServer

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("plain", "evaluate", "evaluate-factory", "evaluate-bounded")
BOUNDED = 100
QUESTION = "Which country is {city} in? Use the lookup tool."
WARM_UP = 3


# -- the variants (each in a child process)


def _factory(url: str) -> Any:
    """A function making the job's ensemble."""
    sys.path.insert(0, str(ROOT))
    from agentensemble import LLM, Agent, Ensemble, RetryPolicy, Task, tool

    @tool
    def lookup(city: str) -> str:
        """Look up a city's country."""
        return "France" if city == "Lyon" else "unknown"

    def make() -> Ensemble:
        llm = LLM(
            "openai/test-model",
            api_base=url,
            api_key="sk-bench",
            timeout=600,
            retry_policy=RetryPolicy(max_attempts=1),
        )
        agent = Agent(role="Assistant", goal="Answer", llm=llm, tools=[lookup])
        return Ensemble(tasks=[Task(description=QUESTION, agent=agent)])

    return make


def _job(variant: str, url: str) -> Any:
    """``variant``'s ``run(count) -> (answers, wrong)``: ``count`` runs of the job at once."""
    from agentensemble.evals import Case, Contains, Dataset, ToolCalled, aevaluate

    make = _factory(url)
    shared = make()

    def dataset(count: int) -> Dataset:
        return Dataset(
            name="concurrency",
            evaluators=[Contains("France"), ToolCalled("lookup", times=1)],
            cases=[Case(name=f"case {i}", inputs={"city": "Lyon"}) for i in range(count)],
        )

    async def plain(count: int) -> tuple[int, int]:
        outputs = await asyncio.gather(*(shared.arun({"city": "Lyon"}) for _ in range(count)))
        return len(outputs), sum("France" not in str(o.raw) for o in outputs)

    async def evaluate(count: int) -> tuple[int, int]:
        target = make if variant == "evaluate-factory" else shared
        limit = min(count, BOUNDED) if variant == "evaluate-bounded" else count
        report = await aevaluate(target, dataset(count), max_concurrency=limit)
        return len(report.cases), sum(not case.passed for case in report.cases)

    return plain if variant == "plain" else evaluate


def _child(variant: str, count: int, url: str, profile: str | None) -> None:
    run = _job(variant, url)

    async def measure() -> dict[str, Any]:
        await run(WARM_UP)  # imports, clients, connections: not what N runs at once cost
        (done, wrong), figures = await measured(
            lambda: run(count), count, profile, ("tottime", 40), ("cumulative", 60)
        )
        return {"variant": variant, **figures, "done": done, "wrong": wrong}

    print(json.dumps(asyncio.run(measure())), flush=True)


def measure(
    server: RecordingServer, variant: str, count: int, profile: str | None
) -> dict[str, Any]:
    """One variant at one size in a fresh child, checked against what the server recorded."""
    before = server.stats()["requests"]
    command = [sys.executable, __file__, "--child", variant, str(count), server.base_url]
    if profile:
        command += ["--profile-to", profile]
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{variant} at {count} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    sent = server.stats()["requests"] - before
    expected = 2 * (count + WARM_UP)
    if sent != expected or result["wrong"] or result["done"] != count:
        raise RuntimeError(
            f"{variant}: {sent} requests for {expected}, {result['done']} of {count} runs, "
            f"{result['wrong']} wrong"
        )
    return result


def load() -> str:
    """``uptime``'s load averages."""
    text = subprocess.run(["uptime"], capture_output=True, text=True).stdout
    return text.strip().rsplit("load average:", 1)[-1].strip()


def medians(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A row per variant and size: the median of its rounds, with the range of runs/s and CPU."""
    merged = []
    for key in dict.fromkeys((row["runs"], row["variant"]) for row in rows):
        rounds = [row for row in rows if (row["runs"], row["variant"]) == key]
        row = dict(rounds[0])
        for name in ("wall", "runs_per_s", "cpu_per_run_ms", "peak_mib", "growth_per_run_kib"):
            row[name] = statistics.median(r[name] for r in rounds)
            row[name + "_range"] = (min(r[name] for r in rounds), max(r[name] for r in rounds))
        row["load"] = " / ".join(r["load"].split(",")[0] for r in rounds)
        row["rounds"] = len(rounds)
        merged.append(row)
    return merged


def table(rows: list[dict[str, Any]]) -> str:
    """The Markdown table (medians of the rounds), then each variant's ratios to the plain runs
    at the same size."""
    rows = medians(rows)
    lines = [
        "| runs | variant | rounds | wall s | runs/s (range) | CPU ms/run (range) | peak MiB "
        "| growth KiB/run | 1-min load per round |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        speed, cpu = row["runs_per_s_range"], row["cpu_per_run_ms_range"]
        lines.append(
            f"| {row['runs']} | {row['variant']} | {row['rounds']} | {row['wall']:.2f} "
            f"| {row['runs_per_s']:.0f} ({speed[0]:.0f}-{speed[1]:.0f}) "
            f"| {row['cpu_per_run_ms']:.2f} ({cpu[0]:.2f}-{cpu[1]:.2f}) | {row['peak_mib']:.0f} "
            f"| {row['growth_per_run_kib']:.1f} | {row['load']} |"
        )
    lines.append("")
    for count in sorted({row["runs"] for row in rows}):
        by = {row["variant"]: row for row in rows if row["runs"] == count}
        plain = by.get("plain")
        if plain is None:
            continue
        for name, row in by.items():
            if name == "plain":
                continue
            lines.append(
                f"- {count} runs, {name}/plain: throughput "
                f"{row['runs_per_s'] / plain['runs_per_s']:.2f}x, CPU per run "
                f"{row['cpu_per_run_ms'] / plain['cpu_per_run_ms']:.2f}x, peak memory "
                f"{row['peak_mib'] / plain['peak_mib']:.2f}x"
            )
    return "\n".join(lines)


def run(
    cases: list[int],
    variants: list[str],
    delay: float,
    profile: Path | None = None,
    rounds: int = 1,
) -> list[dict[str, Any]]:
    """Every variant at every size, ``rounds`` times, against one recording server; a row each."""
    rows = []
    with RecordingServer(delay) as server:
        for count, number in ((c, n) for c in cases for n in range(rounds)):
            for variant in variants:
                path = None
                if profile is not None and variant != "plain" and number == rounds - 1:
                    profile.mkdir(parents=True, exist_ok=True)
                    path = str(profile / f"{variant}-{count}.txt")
                row = measure(server, variant, count, None)
                row["load"] = load()
                rows.append(row)
                print(json.dumps(row), flush=True)
                if path is not None:
                    measure(server, variant, count, path)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--profile", type=Path, help="write cProfiles of the evaluate variants")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--profile-to", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        variant, count, url = args.child
        _child(variant, int(count), url, args.profile_to)
        return 0
    print(f"load before: {load()}", flush=True)
    rows = run(args.cases, args.variants, args.delay, args.profile, args.rounds)
    python = sys.version.split()[0]
    print(f"load after: {load()}; answer delay {args.delay * 1000:.0f} ms; python {python}")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
