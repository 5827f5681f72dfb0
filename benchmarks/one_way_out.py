"""One way out: today's openai lane, litellm (httpx and aiohttp transports) and the official
``openai`` package (httpx and aiohttp), side by side, to decide which clients the model calls keep.

Usage: ``python benchmarks/one_way_out.py [--concurrency 200 1000] [--delay 0.05] [--fresh 3]``.

- **Concurrent**: against ``latency_server.py`` (its own process, every answer after ``--delay``
  seconds), each variant in a fresh child process sends ``2 x concurrency`` requests with
  ``concurrency`` in flight at once (after 5 warm-up requests), and reports requests per second
  and the child's CPU seconds per request (``time.process_time``: all threads).
- **Fresh process**: ``python -c`` importing the client and making one call, wall time from spawn
  to exit (best of ``--fresh``, the first run discarded: bytecode caches allowed).

Prints a Markdown table. Every figure depends on the machine and its load: read ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MESSAGES = [{"role": "user", "content": "Say hi"}]
VARIANTS = (
    "lane: LLM.complete, openai lane (today)",
    "litellm: LLM.complete, httpx transport (today)",
    "litellm: LLM.complete, aiohttp transport",
    "openai package: AsyncOpenAI, httpx",
    "openai package: AsyncOpenAI, aiohttp",
)


def _client(variant: str, url: str) -> Any:
    """An async ``send()`` for ``variant`` against ``url``."""
    if variant.startswith(("lane", "litellm")):
        sys.path.insert(0, str(ROOT))
        from agentensemble import LLM, RetryPolicy

        lane = "auto" if variant.startswith("lane") else "litellm"
        llm = LLM(
            "openai/test-model",
            api_base=url,
            api_key="sk-bench",
            retry_policy=RetryPolicy(max_attempts=1),
            lane=lane,
            timeout=600,
        )

        async def send_llm() -> Any:
            return await llm.complete(MESSAGES)

        return send_llm
    import openai

    http = openai.DefaultAioHttpClient() if variant.endswith("aiohttp") else None
    client = openai.AsyncOpenAI(
        base_url=url, api_key="sk-bench", max_retries=0, timeout=600, http_client=http
    )

    async def send_openai() -> Any:
        return await client.chat.completions.create(model="test-model", messages=MESSAGES)  # type: ignore[arg-type]

    return send_openai


async def _burst(variant: str, url: str, concurrency: int) -> dict[str, float]:
    send = _client(variant, url)
    for _ in range(5):
        await send()
    total = 2 * concurrency
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            await send()

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one() for _ in range(total)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"rps": total / wall, "cpu_ms": 1000 * cpu / total}


def _child(variant: str, url: str, concurrency: int) -> dict[str, float]:
    env = dict(os.environ)
    if "aiohttp" in variant and variant.startswith("litellm"):
        env["DISABLE_AIOHTTP_TRANSPORT"] = "False"  # our loader leaves litellm's default then
    here = str(ROOT / "benchmarks")
    code = (
        f"import asyncio, json, sys; sys.path.insert(0, {here!r}); import one_way_out as b; "
        f"print(json.dumps(asyncio.run(b._burst({variant!r}, {url!r}, {concurrency}))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def _fresh(variant: str, url: str, runs: int) -> float:
    env = dict(os.environ)
    if "aiohttp" in variant and variant.startswith("litellm"):
        env["DISABLE_AIOHTTP_TRANSPORT"] = "False"
    here = str(ROOT / "benchmarks")
    code = (
        f"import asyncio, sys; sys.path.insert(0, {here!r}); import one_way_out as b; "
        f"asyncio.run(b._client({variant!r}, {url!r})())"
    )
    times = []
    for _ in range(runs + 1):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return min(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--concurrency", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--fresh", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=[], help="variants starting with these")
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "latency_server.py"), str(args.delay)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        started = time.perf_counter()
        columns = [f"{c} concurrent: requests/s, CPU ms/request" for c in args.concurrency]
        print("| variant | fresh process to first answer | " + " | ".join(columns) + " |")
        print("|---|---|" + "---|" * len(args.concurrency))
        for variant in VARIANTS:
            if args.only and not variant.startswith(tuple(args.only)):
                continue
            fresh = _fresh(variant, url, args.fresh)
            cells = []
            for concurrency in args.concurrency:
                runs = [_child(variant, url, concurrency) for _ in range(args.rounds)]
                rps = statistics.median(r["rps"] for r in runs)
                cpu = statistics.median(r["cpu_ms"] for r in runs)
                cells.append(f"{rps:.0f} req/s, {cpu:.2f} ms")
            print(f"| {variant} | {fresh:.2f} s | " + " | ".join(cells) + " |", flush=True)
        print(
            f"\n{args.delay * 1000:.0f} ms answers; took {time.perf_counter() - started:.0f} s; "
            f"load average {os.getloadavg()[0]:.1f} at the end."
        )
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
