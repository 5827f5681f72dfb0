"""What durability costs: per model turn on SQLite and Postgres, queue throughput, recovery.

Usage: ``python benchmarks/durable.py [--rounds 9] [--turns 20] [--queue-runs 200] [--write]``.
Everything is local: a Postgres from the ``pgserver`` package started in a temporary directory
(unix socket), SQLite files and the OpenAI-compatible test server on 127.0.0.1; all of it is
stopped and removed at the end, also on failure.

- **Per turn**: one task of ``--turns`` model turns (each but the last calling a tool), run
  (a) plainly with ``Ensemble.run``, (b) durably on SQLite, (c) durably on Postgres, each
  variant in a process of its own (DBOS is one per process) that stays up for the whole
  benchmark; the parent asks them for a sample in turn, round after round, so load drift on a
  shared machine hits every variant alike. Once with the scripted model, once over HTTP.
  CPU time is the variant process's own (not the Postgres server's).
- **Throughput**: ``--queue-runs`` runs of two tasks (``_durable_app.py``: three model turns
  of 50 ms and a tool call) submitted with ``DurableClient`` and awaited, with 1 and 4 worker
  processes (the worker command, ``--concurrency`` runs each) on a fresh Postgres and a fresh
  SQLite database each, ``--queue-rounds`` interleaved rounds; worker CPU beside each figure.
- **Recovery**: a worker holding ``--held`` runs in a slow tool is SIGKILLed; time until every
  run finished, taken over by the ``recover`` command, and by a live worker on its own (its
  lease gone stale after ``dead_after``).

``--write`` replaces the durable section of ``benchmarks/RESULTS.md`` (between its markers).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import platform
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# the code measured: this checkout's, or a baseline source tree's (--baseline) in its variants
sys.path.insert(0, os.environ.get("DURABLE_BENCH_SRC") or str(ROOT))
sys.path.insert(0, str(HERE))

from _durable_queue import bench_recovery, bench_throughput, fresh_database, postgres  # noqa: E402

START, END = "<!-- durable:start -->", "<!-- durable:end -->"
BACKENDS = ("plain", "sqlite", "sqlite-full", "postgres")
BASELINED = ("sqlite", "postgres")  # the variants also measured on --baseline's code
MODES = ("scripted", "http")
PARTS = ("overhead", "throughput", "recovery")
Row = tuple[str, str, str]

# ------------------------------------------------------------------ the variant processes


def _ensemble(turns: int, base_url: str | None) -> Any:
    """One task of ``turns`` model turns, each but the last calling the ``echo`` tool."""
    from agentensemble import LLM, Agent, Ensemble, RetryPolicy, Task, tool
    from agentensemble.testing import ScriptedChatModel, text, tool_call

    @tool
    def echo(value: str) -> str:
        """Echo a value."""
        return value

    llm: Any
    if base_url is None:
        script = [tool_call("echo", {"value": str(i)}) for i in range(turns - 1)]
        llm = ScriptedChatModel([*script, text("done")])
    else:
        once = RetryPolicy(max_attempts=1)
        llm = LLM("openai/test-model", api_base=base_url, api_key="sk-bench", retry_policy=once)
    agent = Agent(role="Bench", goal="g", tools=[echo], llm=llm, max_iterations=turns)
    return Ensemble(tasks=[Task(description="d", agent=agent)])


def _respond(turns: int, body: dict[str, Any]) -> Any:
    """The HTTP server's answer: a tool call until ``turns - 1`` tool results came back."""
    from agentensemble.testing import ToolCallsReply

    done = sum(1 for message in body.get("messages", []) if message.get("role") == "tool")
    if done < turns - 1:
        return ToolCallsReply((("echo", json.dumps({"value": str(done)})),))
    return "done"


def _variant_process(backend: str, url: str, turns: int) -> int:
    """A variant: answers ``MODE COUNT`` lines on stdin with the wall and CPU seconds of
    ``COUNT`` runs of that mode, as one JSON line on stdout."""
    from agentensemble.testing import OpenAICompatibleServer

    server = OpenAICompatibleServer().start()
    server.set_responder(lambda body: _respond(turns, body))
    factories = {
        "scripted": lambda: _ensemble(turns, None),
        "http": lambda: _ensemble(turns, server.base_url),
    }
    runtime: Any = None
    if backend != "plain":
        from agentensemble.durable import DurableRuntime

        sync = "full" if backend == "sqlite-full" else "normal"
        runtime = DurableRuntime(
            url, app_name="durable_bench", worker_id=f"bench-{backend}", sqlite_sync=sync
        )
        for mode, factory in factories.items():
            runtime.register(f"bench-{mode}", factory)
        runtime.launch()
    try:
        print("ready", flush=True)
        for line in sys.stdin:
            mode, count = line.split()
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(int(count)):
                if runtime is None:
                    output = factories[mode]().run()
                else:
                    output = runtime.run(f"bench-{mode}")
                assert output.raw == "done", output.raw
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            print(json.dumps({"wall": wall, "cpu": cpu}), flush=True)
    finally:
        if runtime is not None:
            runtime.shutdown()
        server.close()
    return 0


class _Variant:
    """The parent's handle on a variant process; killed if it does not answer in time."""

    def __init__(
        self, backend: str, url: str, turns: int, logs: Path, source: str | None = None
    ) -> None:
        self.backend = backend + (" (baseline)" if source else "")
        name = backend + ("-baseline" if source else "")
        self._log = open(logs / f"variant-{name}.log", "w")  # noqa: SIM115 - closed in close()
        command = [sys.executable, __file__, "--variant", backend, "--url", url]
        env = {**os.environ, "DURABLE_BENCH_SRC": source or str(ROOT)}
        self.process = subprocess.Popen(
            [*command, "--turns", str(turns)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            cwd=logs,
            env=env,
        )

    def wait_ready(self, timeout: float = 120) -> None:
        """Wait for the process to be up (imports done, DBOS launched)."""
        self._expect_line(timeout)

    def _expect_line(self, timeout: float) -> str:
        stdout: IO[str] | None = self.process.stdout
        assert stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            if not selector.select(timeout) or not (line := stdout.readline()):
                raise RuntimeError(
                    f"variant {self.backend!r} did not answer within {timeout} s (see its log "
                    f"{self._log.name})"
                )
        return line

    def sample(self, mode: str, runs: int, timeout: float = 300) -> tuple[float, float]:
        """Wall and CPU seconds of ``runs`` runs of ``mode`` in this variant."""
        assert self.process.stdin is not None
        self.process.stdin.write(f"{mode} {runs}\n")
        self.process.stdin.flush()
        found = json.loads(self._expect_line(timeout))
        return float(found["wall"]), float(found["cpu"])

    def close(self) -> None:
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
        self._log.close()


def bench_overhead(
    admin_url: str, work: Path, rounds: int, turns: int, runs: int, baseline: str | None = None
) -> list[Row]:
    """Per-turn time of plain, SQLite and Postgres runs, interleaved round by round (and of
    the ``baseline`` source tree's SQLite and Postgres runs, if given)."""
    urls = {
        "plain": "",
        "sqlite": f"sqlite:///{work / 'bench.sqlite'}",
        "sqlite-full": f"sqlite:///{work / 'bench-full.sqlite'}",
        "postgres": fresh_database(admin_url),
    }
    variants: list[_Variant] = []
    try:
        for backend in BACKENDS:  # started side by side, then waited for
            variants.append(_Variant(backend, urls[backend], turns, work))
        if baseline is not None:
            for backend in BASELINED:
                url = (
                    f"sqlite:///{work / 'bench-baseline.sqlite'}"
                    if backend == "sqlite"
                    else fresh_database(admin_url)
                )
                variants.append(_Variant(backend, url, turns, work, baseline))
        for variant in variants:
            variant.wait_ready()
        for variant in variants:  # warm-up: imports, connections, caches
            for mode in MODES:
                variant.sample(mode, 1)
        samples: Samples = collections.defaultdict(list)
        for _ in range(rounds):
            for mode in MODES:
                for variant in variants:
                    wall, cpu = variant.sample(mode, runs)
                    samples[mode, variant.backend].append(
                        (wall / (runs * turns), cpu / (runs * turns))
                    )
    finally:
        for variant in variants:
            variant.close()
    return _overhead_rows(samples, [v.backend for v in variants])


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


Samples = dict[tuple[str, str], list[tuple[float, float]]]


def _overhead_rows(samples: Samples, names: Sequence[str]) -> list[Row]:
    rows: list[Row] = []
    for mode in MODES:
        label = "scripted model" if mode == "scripted" else "local HTTP server"
        plain = samples[mode, "plain"]
        for backend in names:
            walls = [w for w, _ in samples[mode, backend]]
            cpus = [c for _, c in samples[mode, backend]]
            rows.append((
                f"{label}: time per turn, {backend}",
                _ms(statistics.median(walls)),
                f"min-max {_ms(min(walls))}-{_ms(max(walls))}; CPU {_ms(statistics.median(cpus))}",
            ))  # fmt: skip
        for backend in names[1:]:
            # paired by round: each round's durable sample minus the same round's plain one
            extra = [d[0] - p[0] for d, p in zip(samples[mode, backend], plain, strict=True)]
            extra_cpu = [d[1] - p[1] for d, p in zip(samples[mode, backend], plain, strict=True)]
            goal = "; goal <= 3 ms" if backend == "sqlite" else ""
            base = samples.get((mode, f"{backend} (baseline)"))
            if base:  # this branch's overhead over the baseline's, round by round
                ratios = [
                    (d[0] - p[0]) / max(b[0] - p[0], 1e-9)
                    for d, b, p in zip(samples[mode, backend], base, plain, strict=True)
                ]
                goal += f"; {statistics.median(ratios):.2f}x the baseline's (same rounds)"
            rows.append((
                f"{label}: durability overhead per turn, {backend}",
                _ms(statistics.median(extra)),
                f"min-max {_ms(min(extra))}-{_ms(max(extra))}; "
                f"CPU {_ms(statistics.median(extra_cpu))}{goal}",
            ))  # fmt: skip
    return rows


# ------------------------------------------------------------------ report


NOTES = """
- **Per turn**: one task of `--turns` model turns, each but the last calling a tool, so a durable
  turn is two DBOS steps (the model request, the tool call); the run's own start and end
  (workflow row, inputs, output) are spread over its turns. Each variant is a process of its
  own, asked for a sample in turn, round after round; "overhead" pairs each round's durable
  sample with the same round's plain one. CPU is the variant process's own (for Postgres the
  server's CPU is not in it). "(baseline)" rows run the code of `--baseline SRC` (here the
  commit before issue 27's durable work) in the same rounds: "x the baseline's" is this
  branch's overhead over the baseline's, round by round.
- **What a step costs now** (SQLite; CPU timers (`time.thread_time`) around DBOS's calls, the
  driver's statements timed through SQLAlchemy's cursor events, cProfile and py-spy): a run's
  first execution skips DBOS's read before each step (two queries in a transaction); each
  stage of a step goes through DBOS's own thread hop (`asyncio.to_thread`: the skipped read,
  the stage that hands back the next, the write; running the first two in place, issue 27's
  `durable/_lean.py`, was removed in issue 37 as within the noise). What is left per turn is
  DBOS writing the two checkpoints: an `UPDATE` that checks the run's owner, an `INSERT` of the
  pickled output, one commit, about
  1.2-1.7 ms of CPU each at load 2-5, of which SQLite's own work is about 0.35 ms (the two
  statements at the driver) and the rest DBOS's code building the statements through
  SQLAlchemy, keying them for the statement cache and executing them (the "now" expression
  each write stamps costs 0.16 ms of it, built by DBOS per write). Then the run's
  start and end spread over its turns (about 9 ms of CPU a run: the workflow row, our start
  read, the outcome, the output as JSON with its trace), pickling each output twice (about
  0.05 ms each), and the process's background threads (about 35 ms of CPU a second on an idle
  SQLite runtime, 24 of it the queue thread's polls, every 0.2 s at about 5 ms each). Every
  write is needed for the guarantee (a completed step never runs again), so it cannot be
  deferred; what is left is DBOS's own code per write, which we do not copy: the next step is
  upstream (statements DBOS builds once, e.g. with SQLAlchemy's `lambda_stmt` or a prepared
  insert), or a step runner of our own on DBOS's system database, which means owning
  internals that change between minors.
- **SQLite**: the file in WAL mode and `synchronous=NORMAL` (what `DurableRuntime` does by
  default), so a commit waits for no fsync and what is left is CPU. `sqlite-full` is
  `sqlite_sync="full"`: one fsync per commit. On Postgres DBOS's pool no longer pings a
  connection before each transaction (one round trip per step saved).
- **Throughput**: runs of two tasks (three model turns answering after 50 ms each, and a tool
  call), submitted from another process with `DurableClient`, workers with
  `worker_concurrency` 16 (`--concurrency`). A worker's poll (every 0.2 s) is woken by new
  work: runs finishing in it (free slots: with 16, once 4 are free or 0.2 s after the first),
  and on Postgres a notification from every submit, fork or recover; a SQLite worker hears of
  another process's submits at its next poll, then keeps itself busy through its own finished
  runs. The machine has 2 cores for everything (Postgres, the workers, this script, other
  developers' tests), so the runs/s are CPU-bound: see "worker CPU" and the load beside each
  figure. "Back-offs" counts DBOS's warnings that it doubled a worker's polling interval
  after a serialization conflict.
- **Recovery**: from the SIGKILL until every run the dead worker held has finished. By hand:
  the `recover` command, most of it the command starting (imports, DBOS launch), which the
  `runs` command shows on its own. By itself: another worker notices the dead worker's lease
  has not been renewed for `dead_after` seconds and takes its runs over, so the time is about
  `dead_after` plus a heartbeat and the runs' own work.
"""


def render(rows: list[Row], seconds: float, args: argparse.Namespace) -> str:
    head = (
        f"Measured {date.today().isoformat()} on {platform.machine()}, Python "
        f"{platform.python_version()}, {os.cpu_count()} cores, **shared with several developers "
        f"running tests at the same time** (load average {os.getloadavg()[0]:.1f} at the end; "
        f"expect noise; the interleaved ratios hold better than the absolute times); run took "
        f"{seconds:.0f} s (`python benchmarks/durable.py --rounds {args.rounds} --turns "
        f"{args.turns} --queue-runs {args.queue_runs} --queue-rounds {args.queue_rounds} "
        f"--concurrency {args.concurrency}"
        + (" --baseline SRC" if args.baseline else "")
        + " --write`).\n\n| measurement | median | note |\n|---|---|---|\n"
    )
    return head + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows) + "\n" + NOTES


def record(table: str, path: Path = HERE / "RESULTS.md") -> None:
    """Replace the durable section of ``path`` (append it if missing); the rest is kept."""
    text = path.read_text()
    section = f"{START}\n## Durable runs (DBOS)\n\n{table}{END}"
    if START in text and END in text:
        text = text[: text.index(START)] + section + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


def run_all(args: argparse.Namespace) -> list[Row]:
    """Every measurement, in a temporary directory removed at the end."""
    with tempfile.TemporaryDirectory(prefix="durable-bench-") as directory:
        work = Path(directory)
        with postgres(work) as admin_url:
            rows: list[Row] = []
            if "overhead" in args.parts:
                rows += bench_overhead(
                    admin_url, work, args.rounds, args.turns, args.runs, args.baseline
                )
            if "throughput" in args.parts:
                rows += bench_throughput(
                    admin_url,
                    work,
                    args.queue_runs,
                    args.workers,
                    rounds=args.queue_rounds,
                    concurrency=args.concurrency,
                    baseline=args.baseline,
                )
            if "recovery" in args.parts:
                rows += bench_recovery(admin_url, work, args.held)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--turns", type=int, default=20, help="model turns per run")
    parser.add_argument("--runs", type=int, default=3, help="runs per sample")
    parser.add_argument("--queue-runs", type=int, default=200)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--queue-rounds", type=int, default=3, help="throughput rounds")
    parser.add_argument("--concurrency", type=int, default=16, help="worker_concurrency")
    parser.add_argument(
        "--baseline",
        metavar="SRC",
        help="also measure the agentensemble source tree at SRC (e.g. `git archive` of main), "
        "interleaved with this checkout's, for same-run before/after ratios",
    )
    parser.add_argument("--held", type=int, default=4, help="runs the killed worker holds")
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=PARTS,
        default=list(PARTS),
        help="what to measure (all by default; --write needs all)",
    )
    parser.add_argument("--write", action="store_true", help="record in benchmarks/RESULTS.md")
    parser.add_argument("--variant", choices=BACKENDS, help=argparse.SUPPRESS)
    parser.add_argument("--url", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.variant:
        return _variant_process(args.variant, args.url, args.turns)
    if args.write and set(args.parts) != set(PARTS):
        parser.error("--write records the whole section: measure every part (leave out --parts)")
    started = time.perf_counter()
    table = render(run_all(args), time.perf_counter() - started, args)
    print(table)
    if args.write:
        record(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
