"""Cost of one served call: ``agentensemble serve-mcp`` over stdio and over streamable HTTP,
against the same ensemble run in process.

Usage: ``python benchmarks/serve_overhead.py [--calls 50] [--repeats 7]``. The crew is one task
on the offline model (``--model scripted``: no network), so what is measured is the serving
path: the MCP client and server (JSON-RPC, validation), the argument checks, the fresh ensemble
the served crew builds for every call (its crew file read again), progress notifications, and
the run itself. The in-process baseline is ``await ensemble.arun(inputs)`` on the same crew
built once. The kinds are measured interleaved in one run (medians of ``--repeats`` batches of
``--calls`` sequential calls), so machine load hits them alike. Target: under 5 ms added per
call at the median.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SDK_SERVER = ROOT / "tests" / "mcp" / "mcp_test_server.py"  # the mcp package's own MCPServer
CREW = """\
model: openai/unused
tasks:
  answer:
    description: Answer {question} in one line.
    expected_output: One line.
"""
INPUTS = {"question": "why is the sea salty"}


async def _batch(call: Callable[[], Awaitable[object]], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        await call()
    return (time.perf_counter() - started) / calls


def _start_sdk_http() -> tuple[subprocess.Popen[bytes], str]:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(SDK_SERVER), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit("the SDK's test server did not start")


def _start_http(crew: Path) -> tuple[subprocess.Popen[bytes], str]:
    command = [sys.executable, "-m", "agentensemble", "serve-mcp", str(crew), "--http"]
    process = subprocess.Popen(
        [*command, "--port", "0", "--model", "scripted"], stderr=subprocess.PIPE
    )
    assert process.stderr is not None
    line = process.stderr.readline().decode()
    found = re.search(r" on (http://\S+)", line)
    if found is None:
        process.kill()
        raise SystemExit(f"serve-mcp --http did not start: {line}")
    return process, found.group(1) + "/mcp"


async def measure(crew: Path, calls: int, repeats: int) -> dict[str, float]:
    from mcp import Client, StdioServerParameters

    from agentensemble import Ensemble
    from agentensemble.cli._common import use_model

    ensemble = Ensemble.from_yaml(crew)
    use_model(ensemble, "scripted")
    stdio = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentensemble", "serve-mcp", str(crew), "--model", "scripted"],
    )
    sdk_stdio = StdioServerParameters(command=sys.executable, args=[str(SDK_SERVER)])
    process, url = _start_http(crew)
    sdk_process, sdk_url = _start_sdk_http()
    samples: dict[str, list[float]] = {
        "in_process": [],
        "stdio": [],
        "http": [],
        "sdk_stdio": [],
        "sdk_http": [],
    }
    try:
        async with (
            Client(stdio) as over_stdio,
            Client(url) as over_http,
            Client(sdk_stdio) as sdk_over_stdio,
            Client(sdk_url) as sdk_over_http,
        ):

            async def local() -> object:
                return await ensemble.arun(INPUTS)

            async def via_stdio() -> object:
                result = await over_stdio.call_tool("crew", INPUTS)
                assert not result.is_error, result
                return result

            async def via_http() -> object:
                result = await over_http.call_tool("crew", INPUTS)
                assert not result.is_error, result
                return result

            async def sdk_via_stdio() -> object:
                return await sdk_over_stdio.call_tool("add", {"a": 1, "b": 2})

            async def sdk_via_http() -> object:
                return await sdk_over_http.call_tool("add", {"a": 1, "b": 2})

            kinds = {
                "in_process": local,
                "stdio": via_stdio,
                "http": via_http,
                "sdk_stdio": sdk_via_stdio,
                "sdk_http": sdk_via_http,
            }
            for call in kinds.values():  # warm up: imports, connections, caches
                await _batch(call, 3)
            for _ in range(repeats):
                for kind, call in kinds.items():
                    samples[kind].append(await _batch(call, calls))
    finally:
        for started in (process, sdk_process):
            started.terminate()
            started.wait(timeout=10)
    return {kind: statistics.median(values) for kind, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as directory:
        crew = Path(directory) / "crew.yaml"
        crew.write_text(CREW)
        result = asyncio.run(measure(crew, args.calls, args.repeats))
    local, stdio, http = result["in_process"], result["stdio"], result["http"]
    sdk_stdio, sdk_http = result["sdk_stdio"], result["sdk_http"]
    ms = 1000.0
    print(
        f"Measured {date.today()} on {platform.machine()}, Python {platform.python_version()}; "
        f"{args.repeats} batches of {args.calls} calls; run took "
        f"{time.perf_counter() - started:.0f} s.\n"
    )
    print("| measurement | median | note |\n|---|---|---|")
    print(f"| same crew in process, `await arun()` per call | {local * ms:.2f} ms | baseline |")
    print(f"| served over stdio per call | {stdio * ms:.2f} ms | {stdio / local:.1f}x |")
    print(f"| served over streamable HTTP per call | {http * ms:.2f} ms | {http / local:.1f}x |")
    print(f"| added by serving, stdio | {(stdio - local) * ms:.2f} ms | target < 5 ms |")
    print(f"| added by serving, HTTP | {(http - local) * ms:.2f} ms | target < 5 ms |")
    print(
        f"| the `mcp` SDK's own MCPServer, trivial tool, stdio | {sdk_stdio * ms:.2f} ms | "
        "floor set by the SDK |"
    )
    print(
        f"| the `mcp` SDK's own MCPServer, trivial tool, HTTP | {sdk_http * ms:.2f} ms | "
        "floor set by the SDK |"
    )
    print(
        f"| added by serving beyond the SDK's floor and the run, stdio | "
        f"{(stdio - local - sdk_stdio) * ms:.2f} ms | ours |"
    )
    print(
        f"| added by serving beyond the SDK's floor and the run, HTTP | "
        f"{(http - local - sdk_http) * ms:.2f} ms | ours |"
    )


if __name__ == "__main__":
    main()
