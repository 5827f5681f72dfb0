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

Wall time on a shared machine mostly measures the scheduler (every round trip wakes two
processes), so CPU is measured beside it: the client's own CPU time plus the server
process's (from ``/proc/<pid>/stat``), per call. The load average is printed with the result.
"""

from __future__ import annotations

import argparse
import asyncio
import os
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
from typing import Any

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


def _process_cpu(pid: int | None) -> float:
    """CPU seconds (user + system) of process ``pid`` so far; 0 without one or off Linux."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _child_pid(parameters: Any) -> int | None:
    """The pid of this process's child started with ``parameters`` (stdio; Linux only)."""
    wanted = " ".join([parameters.command, *parameters.args])
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid() and command == wanted:
            return int(entry.name)
    return None


async def _batch(
    call: Callable[[], Awaitable[object]], calls: int, server: int | None
) -> tuple[float, float]:
    """Wall and CPU (this process plus the server's) per call, in seconds."""
    cpu_before = time.process_time() + _process_cpu(server)
    started = time.perf_counter()
    for _ in range(calls):
        await call()
    wall = time.perf_counter() - started
    cpu = time.process_time() + _process_cpu(server) - cpu_before
    return wall / calls, cpu / calls


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
        [*command, "--port", "0", "--model", "scripted"], stderr=subprocess.PIPE, cwd=ROOT
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

    from agentensemble.cli._common import use_model
    from agentensemble.cli._serving import crew_factory
    from agentensemble.config import load_crew
    from agentensemble.serve import mcp_server

    ensemble = load_crew(crew)
    use_model(ensemble, "scripted")
    # the same server objects in this process (the SDK's in-memory transport): what serving
    # costs before any transport, ours against the SDK's own MCPServer
    served = mcp_server({"crew": crew_factory(argparse.Namespace(crew=crew, model="scripted"))})
    sys.path.insert(0, str(SDK_SERVER.parent))
    import mcp_test_server  # type: ignore[import-not-found]

    stdio = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentensemble", "serve-mcp", str(crew), "--model", "scripted"],
        cwd=ROOT,  # this checkout's agentensemble, whatever the venv was installed from
    )
    sdk_stdio = StdioServerParameters(command=sys.executable, args=[str(SDK_SERVER)])
    process, url = _start_http(crew)
    sdk_process, sdk_url = _start_sdk_http()
    samples: dict[str, list[tuple[float, float]]] = {
        "in_process": [],
        "in_memory": [],
        "sdk_in_memory": [],
        "stdio": [],
        "http": [],
        "sdk_stdio": [],
        "sdk_http": [],
    }
    try:
        async with (
            Client(served) as in_memory,
            Client(mcp_test_server.server) as sdk_in_memory,
            Client(stdio) as over_stdio,
            Client(url) as over_http,
            Client(sdk_stdio) as sdk_over_stdio,
            Client(sdk_url) as sdk_over_http,
        ):

            async def local() -> object:
                return await ensemble.arun(INPUTS)

            async def via_memory() -> object:
                result = await in_memory.call_tool("crew", INPUTS)
                assert not result.is_error, result
                return result

            async def sdk_via_memory() -> object:
                return await sdk_in_memory.call_tool("add", {"a": 1, "b": 2})

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

            servers = {
                "in_process": None,
                "in_memory": None,
                "sdk_in_memory": None,
                "stdio": _child_pid(stdio),
                "http": process.pid,
                "sdk_stdio": _child_pid(sdk_stdio),
                "sdk_http": sdk_process.pid,
            }
            kinds = {
                "in_process": local,
                "in_memory": via_memory,
                "sdk_in_memory": sdk_via_memory,
                "stdio": via_stdio,
                "http": via_http,
                "sdk_stdio": sdk_via_stdio,
                "sdk_http": sdk_via_http,
            }
            for call in kinds.values():  # warm up: imports, connections, caches
                await _batch(call, 3, None)
            for _ in range(repeats):
                for kind, call in kinds.items():
                    samples[kind].append(await _batch(call, calls, servers[kind]))
    finally:
        for started in (process, sdk_process):
            started.terminate()
            started.wait(timeout=10)
    medians: dict[str, float] = {}
    for kind, values in samples.items():
        medians[kind] = statistics.median(wall for wall, _ in values)
        medians[f"{kind}_cpu"] = statistics.median(cpu for _, cpu in values)
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as directory:
        crew = Path(directory) / "crew.yaml"
        crew.write_text(CREW)
        result = asyncio.run(measure(crew, args.calls, args.repeats))
    load_after = os.getloadavg()[0]
    ms = 1000.0
    print(
        f"Measured {date.today()} on {platform.machine()} ({os.cpu_count()} cores), Python "
        f"{platform.python_version()}; {args.repeats} batches of {args.calls} calls; run took "
        f"{time.perf_counter() - started:.0f} s; load average {load_before:.2f} before, "
        f"{load_after:.2f} after.\n"
    )
    print("| per call, median | wall | CPU (client + server) | note |\n|---|---|---|---|")

    def row(label: str, kind: str, note: str = "") -> None:
        wall, cpu = result[kind], result[f"{kind}_cpu"]
        print(f"| {label} | {wall * ms:.2f} ms | {cpu * ms:.2f} ms | {note} |")

    def added(label: str, kind: str, base: str, note: str) -> None:
        wall = result[kind] - result[base]
        cpu = result[f"{kind}_cpu"] - result[f"{base}_cpu"]
        print(f"| {label} | {wall * ms:.2f} ms | {cpu * ms:.2f} ms | {note} |")

    row("same crew in process, `await arun()`", "in_process", "baseline")
    row("served in process (`Client(server)`, no transport)", "in_memory")
    row("served over stdio", "stdio")
    row("served over streamable HTTP", "http")
    added("added by serving, stdio", "stdio", "in_process", "target < 5 ms")
    added("added by serving, HTTP", "http", "in_process", "target < 5 ms")
    row("`mcp` SDK's `MCPServer`, trivial tool, in process", "sdk_in_memory", "SDK floor")
    row("`mcp` SDK's `MCPServer`, trivial tool, stdio", "sdk_stdio", "floor set by the SDK")
    row("`mcp` SDK's `MCPServer`, trivial tool, HTTP", "sdk_http", "floor set by the SDK")
    for transport in ("in_memory", "stdio", "http"):
        wall = result[transport] - result["in_process"] - result[f"sdk_{transport}"]
        cpu = result[f"{transport}_cpu"] - result["in_process_cpu"] - result[f"sdk_{transport}_cpu"]
        print(
            f"| added beyond the SDK's floor and the run, {transport} | {wall * ms:.2f} ms | "
            f"{cpu * ms:.2f} ms | ours |"
        )


if __name__ == "__main__":
    main()
