"""Per-call cost of an MCP tool (stdio server in a subprocess) against a local ``@tool``.

Usage: ``python benchmarks/mcp_overhead.py [--calls 200] [--repeats 9]``. Each call goes through
the resolver's executable, exactly as the executor runs a tool: argument parsing and validation,
logging and metrics, then the body — for the MCP tool a JSON-RPC round trip over the server's
stdin/stdout. The kinds are measured interleaved in one run (medians of ``--repeats`` batches of
``--calls`` calls), so machine load hits them alike. Server start + stop is measured apart: it
is paid once per run, not per call.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SERVER = ROOT / "tests" / "mcp" / "mcp_test_server.py"
ARGUMENTS = '{"a": 1, "b": 2}'


async def _batch(run: Callable[[str], Awaitable[object]], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        await run(ARGUMENTS)
    return (time.perf_counter() - started) / calls


async def measure(calls: int, repeats: int) -> dict[str, float]:
    from agentensemble import tool
    from agentensemble.mcp import MCPServerStdio
    from agentensemble.tools import ToolResolver
    from agentensemble.tools.source import open_tool_sources

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers (sync: runs in a worker thread)."""
        return a + b

    @tool(name="add_async")
    async def add_async(a: int, b: int) -> int:
        """Add two integers (async: runs on the loop)."""
        return a + b

    server = MCPServerStdio(sys.executable, [str(SERVER)], include=["add"], prefix="mcp")
    samples: dict[str, list[float]] = {"mcp": [], "sync": [], "async": [], "startup": []}
    async with open_tool_sources([server]):
        resolved = ToolResolver().resolve([server, add, add_async])
        kinds = {
            "mcp": resolved.get("mcp_add"),
            "sync": resolved.get("add"),
            "async": resolved.get("add_async"),
        }
        for executable in kinds.values():  # warm up every path once
            assert executable is not None
            await executable.run(ARGUMENTS)
        for _ in range(repeats):
            for kind, executable in kinds.items():
                assert executable is not None
                samples[kind].append(await _batch(executable.run, calls))
    for _ in range(max(3, repeats // 3)):
        started = time.perf_counter()
        async with open_tool_sources([server]):
            pass
        samples["startup"].append(time.perf_counter() - started)
    return {kind: statistics.median(values) for kind, values in samples.items()}


def render(result: dict[str, float], calls: int, repeats: int, seconds: float) -> str:
    mcp, sync, async_ = result["mcp"], result["sync"], result["async"]
    rows = [
        ("local `@tool` (sync, worker thread) per call", f"{sync * 1e3:.3f} ms", ""),
        ("local `@tool` (async) per call", f"{async_ * 1e3:.3f} ms", ""),
        (
            "MCP tool over stdio per call",
            f"{mcp * 1e3:.3f} ms",
            f"{mcp / sync:.1f}x the sync @tool",
        ),
        ("MCP overhead per call vs sync `@tool`", f"{(mcp - sync) * 1e3:.3f} ms", "same run"),
        ("MCP stdio server start + list + stop, once per run", f"{result['startup']:.2f} s", ""),
    ]
    head = (
        f"Measured {date.today().isoformat()} on {platform.machine()}, Python "
        f"{platform.python_version()}, {os.cpu_count()} cores; {repeats} interleaved batches "
        f"of {calls} calls; run took {seconds:.0f} s.\n\n"
        "| measurement | median | note |\n|---|---|---|\n"
    )
    return head + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    started = time.perf_counter()
    result = asyncio.run(measure(args.calls, args.repeats))
    print(render(result, args.calls, args.repeats, time.perf_counter() - started))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
