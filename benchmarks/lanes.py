"""The two model lanes side by side: per-request overhead and a fresh process's first answer.

Usage: ``python benchmarks/lanes.py [--rounds 9] [--calls 200] [--write]``. Everything runs
against the local OpenAI-compatible test server (``TCP_NODELAY``, answering at once), in one
run, interleaved round by round so load drift on a shared machine hits every variant alike.

- **Per request**: the same call made ``--calls`` times on one event loop by (a) a bare
  ``httpx`` POST of a pre-encoded body, parsed with ``json.loads`` (the floor: the server's own
  time plus the least a Python client can do), (b) ``LLM.complete`` on the openai lane, (c) raw
  ``litellm.acompletion``, (d) ``LLM.complete`` forced through litellm. "Overhead" is a
  variant's time per request minus the floor's; CPU is the process CPU time per request.
- **Fresh process**: ``python -c`` importing agentensemble and running a one-task ensemble to
  its first model answer, on each lane: wall time from spawn to exit and peak RSS (the child's
  own ``VmHWM``: a forked child's ``ru_maxrss`` would count the parent's pages).
  Bytecode caching is allowed and the first run of each is discarded (see DEPENDENCIES.md).

``--write`` replaces the "Model lanes" section of ``benchmarks/RESULTS.md`` (between its markers).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import textwrap
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

START, END = "<!-- lanes:start -->", "<!-- lanes:end -->"
RAW_OPENAI = "raw openai.AsyncOpenAI"
MESSAGES = [{"role": "user", "content": "Say hi"}]
Row = tuple[str, str, str]


def _variants(base_url: str) -> dict[str, Callable[[], Awaitable[Any]]]:
    import httpx

    from agentensemble import LLM, RetryPolicy
    from agentensemble.llm._litellm import load_litellm

    litellm = load_litellm()
    once = RetryPolicy(max_attempts=1)
    fast = LLM("openai/test-model", api_base=base_url, api_key="sk-bench", retry_policy=once)
    slow = fast.model_copy(update={"lane": "litellm"})
    assert fast.effective_lane == "openai" and slow.effective_lane == "litellm"
    body = json.dumps({"model": "test-model", "messages": MESSAGES}).encode()
    headers = {"Authorization": "Bearer sk-bench", "Content-Type": "application/json"}
    clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]
    clients = weakref.WeakKeyDictionary()

    async def floor() -> Any:
        loop = asyncio.get_running_loop()
        client = clients.get(loop) or clients.setdefault(loop, httpx.AsyncClient())
        response = await client.post(f"{base_url}/chat/completions", content=body, headers=headers)
        return json.loads(response.content)

    async def raw_litellm() -> Any:
        return await litellm.acompletion(
            model="openai/test-model",
            messages=MESSAGES,
            api_base=base_url,
            api_key="sk-bench",
            max_retries=0,
            timeout=60.0,
        )

    return {
        "floor: bare httpx POST + json.loads": floor,
        "openai lane: LLM.complete": lambda: fast.complete(MESSAGES),
        "raw litellm.acompletion": raw_litellm,
        "litellm lane: LLM.complete": lambda: slow.complete(MESSAGES),
    }


def _measure(call: Callable[[], Awaitable[Any]], calls: int) -> tuple[float, float]:
    """Wall and CPU seconds per request for ``calls`` sequential requests on one event loop."""

    async def loop() -> tuple[float, float]:
        await call()  # this loop's client and connection
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(calls):
            await call()
        return (time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls

    return asyncio.run(loop())


def bench_requests(rounds: int, calls: int) -> list[Row]:
    from openai_server import OpenAIServer

    with OpenAIServer() as server:
        server.set_responder(lambda request: "hi")
        variants = _variants(server.base_url)
        for call in variants.values():  # warm-up: imports, caches
            _measure(call, 20)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
        for _ in range(rounds):
            for name, call in variants.items():
                samples[name].append(_measure(call, calls))
    wall = {n: statistics.median(w for w, _ in s) for n, s in samples.items()}
    cpu = {n: statistics.median(c for _, c in s) for n, s in samples.items()}
    spread = {n: (min(w for w, _ in s), max(w for w, _ in s)) for n, s in samples.items()}
    names = list(variants)
    floor_name, raw_name = names[0], "raw litellm.acompletion"
    rows: list[Row] = []
    for name in names:
        low, high = spread[name]
        note = f"min-max {low * 1e3:.2f}-{high * 1e3:.2f} ms; CPU {cpu[name] * 1e3:.2f} ms"
        rows.append((f"per request, {name}", f"{wall[name] * 1e3:.2f} ms", note))
    goals = {names[1]: "goal <= 0.5x", names[3]: "goal <= 1.05x"}
    for label, figures in (("wall", wall), ("CPU", cpu)):
        over = {n: figures[n] - figures[floor_name] for n in names}
        for name in names[1:]:
            ratio = over[name] / over[raw_name] if over[raw_name] > 0 else float("nan")
            rows.append(
                (
                    f"{label} overhead above the floor, {name}",
                    f"{over[name] * 1e3:.2f} ms",
                    f"{ratio:.2f}x raw litellm's {goals.get(name, '')}".rstrip(),
                )
            )
    return rows


class _ServerProcess:
    """A server in a process of its own, so it does not share the client's GIL."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url


@contextlib.contextmanager
def _server_process(delay: float) -> Iterator[_ServerProcess]:
    """``benchmarks/latency_server.py`` in a child process, answering after ``delay`` s."""
    child = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "latency_server.py"), str(delay)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        yield _ServerProcess(child.stdout.readline().strip())
    finally:
        if child.stdin is not None:
            child.stdin.close()
        child.wait(timeout=30)


def bench_concurrent(rounds: int, ensembles: int = 50, runs: int = 4) -> list[Row]:
    """Throughput of ``ensembles`` concurrent one-task ensembles (each run ``runs`` times in a
    row) against a server taking 100 ms per answer (in its own process), on each lane, beside raw
    litellm making the same number of concurrent requests: where client CPU, not the provider,
    sets the limit."""
    import openai

    from agentensemble import LLM, Agent, Ensemble, RetryPolicy, Task
    from agentensemble.llm._litellm import load_litellm

    litellm = load_litellm()
    rates: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    with _server_process(delay=0.1) as server:

        def team(lane: str) -> Ensemble:
            llm = LLM(
                "openai/test-model",
                api_base=server.base_url,
                api_key="sk-bench",
                retry_policy=RetryPolicy(max_attempts=1),
                lane="litellm" if lane == "litellm" else "auto",
            )
            agent = Agent(role="Greeter", goal="Greet", llm=llm)
            return Ensemble(tasks=[Task(description="Say hi", agent=agent)])

        async def ensembles_on(lane: str) -> None:
            async def one() -> None:
                ensemble = team(lane)
                for _ in range(runs):
                    await ensemble.arun()

            await asyncio.gather(*(one() for _ in range(ensembles)))

        async def calls_on(lane: str) -> None:
            llm = team(lane).tasks[0].agent.llm  # type: ignore[union-attr]

            async def one() -> None:
                for _ in range(runs):
                    await llm.complete(MESSAGES)

            await asyncio.gather(*(one() for _ in range(ensembles)))

        async def raw() -> None:
            async def one() -> None:
                for _ in range(runs):
                    await litellm.acompletion(
                        model="openai/test-model",
                        messages=MESSAGES,
                        api_base=server.base_url,
                        api_key="sk-bench",
                        max_retries=0,
                    )

            await asyncio.gather(*(one() for _ in range(ensembles)))

        async def raw_openai() -> None:
            # what a user of the OpenAI SDK writes: one client, shared by every request
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-bench", max_retries=0)
            async with client:

                async def one() -> None:
                    for _ in range(runs):
                        await client.chat.completions.create(
                            model="test-model",
                            messages=MESSAGES,  # type: ignore[arg-type]
                        )

                await asyncio.gather(*(one() for _ in range(ensembles)))

        variants: dict[str, Callable[[], Coroutine[Any, Any, None]]] = {
            RAW_OPENAI: raw_openai,
            "raw litellm.acompletion": raw,
            "LLM.complete, openai lane": lambda: calls_on("openai"),
            "ensembles, openai lane": lambda: ensembles_on("openai"),
            "ensembles, litellm lane": lambda: ensembles_on("litellm"),
        }
        for name, make in variants.items():  # warm-up
            asyncio.run(make())
            rates[name], cpu[name] = [], []
        for _ in range(max(3, rounds // 3)):
            for name, make in variants.items():  # interleaved: each variant once a round
                started, used = time.perf_counter(), time.process_time()
                asyncio.run(make())
                rates[name].append(ensembles * runs / (time.perf_counter() - started))
                cpu[name].append((time.process_time() - used) / (ensembles * runs))
    raw_rate = statistics.median(rates["raw litellm.acompletion"])
    rows: list[Row] = []
    for name, samples in rates.items():
        rate = statistics.median(samples)
        goal = " (goal >= 1.5x)" if name.endswith("openai lane") else ""
        # paired by round: this variant's rate over the raw OpenAI SDK's in the same round
        versus = statistics.median(a / b for a, b in zip(samples, rates[RAW_OPENAI], strict=True))
        if name == "ensembles, openai lane":
            goal += f"; {versus:.2f}x raw AsyncOpenAI, same rounds (goal >= 0.9x)"
        elif name != RAW_OPENAI:
            goal += f"; {versus:.2f}x raw AsyncOpenAI"
        rows.append(
            (
                f"{ensembles} concurrent, 100 ms answers: {name}",
                f"{rate:.0f} requests/s",
                f"{rate / raw_rate:.2f}x raw litellm{goal}; min-max "
                f"{min(samples):.0f}-{max(samples):.0f}; client CPU "
                f"{statistics.median(cpu[name]) * 1e3:.2f} ms/request",
            )
        )
    return rows


_FIRST_ANSWER = textwrap.dedent(
    """
    from agentensemble import LLM, Agent, Ensemble, Task
    llm = LLM("openai/test-model", api_base={base!r}, api_key="sk-bench")
    agent = Agent(role="Greeter", goal="Greet", llm=llm)
    print(Ensemble(tasks=[Task(description="Say hi", agent=agent)]).run().raw)
    with open("/proc/self/status") as status:  # VmHWM: this program's peak RSS (not the fork's)
        print(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
    """
)


def _fresh_process(base_url: str, lane: str) -> tuple[float, float]:
    """Spawn-to-exit seconds and peak RSS (MiB) of a process running to its first answer."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.pop("AGENTENSEMBLE_LLM_LANE", None)
    if lane == "litellm":
        env["AGENTENSEMBLE_LLM_LANE"] = "litellm"
    code = _FIRST_ANSWER.format(base=base_url)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=str(ROOT)
    )
    elapsed = time.perf_counter() - started
    lines = done.stdout.split()
    if done.returncode != 0 or lines[:1] != ["hi"]:
        raise RuntimeError(f"fresh process on the {lane} lane failed: {done.stderr[-2000:]}")
    return elapsed, int(lines[1]) / 1024


def bench_first_answer(rounds: int) -> list[Row]:
    from openai_server import OpenAIServer

    lanes = ("openai", "litellm")
    samples: dict[str, list[tuple[float, float]]] = {lane: [] for lane in lanes}
    with OpenAIServer() as server:
        server.set_responder(lambda request: "hi")
        for lane in lanes:
            _fresh_process(server.base_url, lane)  # writes bytecode caches: not counted
        for _ in range(rounds):
            for lane in lanes:
                samples[lane].append(_fresh_process(server.base_url, lane))
    rows: list[Row] = []
    for lane in lanes:
        seconds = [s for s, _ in samples[lane]]
        mib = [m for _, m in samples[lane]]
        goal = " (goal <= 1.5 s, <= 100 MiB)" if lane == "openai" else ""
        rows += [
            (
                f"fresh process to first answer, {lane} lane",
                f"{statistics.median(seconds):.2f} s",
                f"min-max {min(seconds):.2f}-{max(seconds):.2f} s{goal}",
            ),
            (
                f"peak RSS to first answer, {lane} lane",
                f"{statistics.median(mib):.0f} MiB",
                f"min-max {min(mib):.0f}-{max(mib):.0f} MiB",
            ),
        ]
    return rows


def render(rows: list[Row], seconds: float, args: argparse.Namespace) -> str:
    head = (
        f"Measured {date.today().isoformat()} on {platform.machine()}, Python "
        f"{platform.python_version()}, {os.cpu_count()} cores, by `python benchmarks/lanes.py` "
        f"({args.rounds} interleaved rounds, {args.calls} requests per round and variant); "
        f"run took {seconds:.0f} s; load average {os.getloadavg()[0]:.1f} at the end."
        "\n\n| measurement | median | note |\n|---|---|---|\n"
    )
    return head + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows) + "\n"


def write_section(table: str) -> None:
    path = ROOT / "benchmarks" / "RESULTS.md"
    text = path.read_text()
    section = f"{START}\n## Model lanes\n\n{table}{END}"
    if START in text and END in text:
        text = text[: text.index(START)] + section + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--write", action="store_true", help="record in benchmarks/RESULTS.md")
    parser.add_argument(
        "--only", choices=("requests", "concurrent", "first-answer"), help="one part (no --write)"
    )
    args = parser.parse_args()
    if args.only and args.write:
        parser.error("--write records the whole section: measure every part (leave out --only)")
    started = time.perf_counter()
    parts: dict[str, Callable[[], list[Row]]] = {
        "requests": lambda: bench_requests(args.rounds, args.calls),
        "concurrent": lambda: bench_concurrent(args.rounds),
        "first-answer": lambda: bench_first_answer(args.rounds),
    }
    rows = [row for name, part in parts.items() if args.only in (None, name) for row in part()]
    table = render(rows, time.perf_counter() - started, args)
    print(table)
    if args.write:
        write_section(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
