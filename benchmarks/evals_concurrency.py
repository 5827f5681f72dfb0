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
import contextlib
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("plain", "evaluate", "evaluate-factory", "evaluate-bounded")
BOUNDED = 100
QUESTION = "Which country is {city} in? Use the lookup tool."
WARM_UP = 3


# -- the recording server (its own process)


def _answer(body: dict[str, Any]) -> dict[str, Any]:
    """A tool call first, the final text once the tool's result is in the history."""
    messages = body.get("messages") or [{}]
    if messages[-1].get("role") == "tool":
        message: dict[str, Any] = {"role": "assistant", "content": "Lyon is in France."}
        finish = "stop"
    else:
        call = {
            "id": "call_lookup_1",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"city": "Lyon"}'},
        }
        message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "test-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    }


def _http(data: bytes) -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}"
    return head.encode() + b"\r\n\r\n" + data


async def _serve(delay: float) -> None:
    stats = {"requests": 0, "peak_in_flight": 0}
    in_flight = 0

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal in_flight
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                raw = await reader.readexactly(length)
                if head.startswith(b"GET /stats"):
                    writer.write(_http(json.dumps(stats).encode()))
                    await writer.drain()
                    continue
                answer = json.dumps(_answer(json.loads(raw))).encode()
                stats["requests"] += 1
                in_flight += 1
                stats["peak_in_flight"] = max(stats["peak_in_flight"], in_flight)
                try:
                    await asyncio.sleep(delay)
                finally:
                    in_flight -= 1
                writer.write(_http(answer))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client hung up, or we are shutting down
        finally:
            writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0, backlog=4096)
    port = server.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until stdin closes
    server.close()


class RecordingServer:
    """The server process: ``base_url``, ``stats()``; it ends with the ``with`` block."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def __enter__(self) -> RecordingServer:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(self.delay)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()
        if not self.base_url.startswith("http://"):
            self.__exit__()
            raise RuntimeError(f"the recording server did not start: {self.base_url!r}")
        return self

    def stats(self) -> dict[str, int]:
        url = self.base_url.removesuffix("/v1") + "/stats"
        with urllib.request.urlopen(url, timeout=30) as answer:
            result: dict[str, int] = json.loads(answer.read())
            return result

    def __exit__(self, *exc: object) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


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


def _memory() -> tuple[int, int]:
    """(VmRSS, VmHWM) of this process in bytes."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) * 1024
    return fields["VmRSS"], fields["VmHWM"]


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
        with contextlib.suppress(OSError):  # the peak from here on: VmHWM reset to the RSS
            Path("/proc/self/clear_refs").write_text("5")
        before, _ = _memory()
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        cpu, wall = time.process_time(), time.perf_counter()
        done, wrong = await run(count)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if profiler is not None:
            import io
            import pstats

            profiler.disable()
            text = io.StringIO()
            stats = pstats.Stats(profiler, stream=text)
            stats.sort_stats("tottime").print_stats(40)
            stats.sort_stats("cumulative").print_stats(60)
            Path(profile).write_text(text.getvalue())
        _, peak = _memory()
        return {
            "variant": variant,
            "runs": count,
            "done": done,
            "wall": wall,
            "cpu_per_run_ms": 1000 * cpu / count,
            "runs_per_s": count / wall,
            "peak_mib": peak / 2**20,
            "growth_per_run_kib": max(peak - before, 0) / count / 1024,
            "wrong": wrong,
        }

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
    parser.add_argument("--serve", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--profile-to", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        asyncio.run(_serve(args.serve))
        return 0
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
