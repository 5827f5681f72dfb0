"""Cost of one AG-UI run over HTTP (``ag_ui_app`` served by the hardened uvicorn setup on
127.0.0.1, posted with httpx, its event stream read to the end) against the same ensemble
streamed in process (``async for event in ensemble.astream(inputs)``).

Usage: ``python benchmarks/ag_ui_overhead.py [--calls 50] [--repeats 7]``. The crew is one task
on an offline model that streams a 14-word answer as token deltas, so what is measured is the
serving path: the hardened guard (Host, token, JSON bounds), the RunAgentInput check, the input
mapping, the run's task and queue, the event translation, the encoding and the HTTP stream. The
kinds are measured interleaved (medians of ``--repeats`` batches of ``--calls`` sequential runs), so
machine load hits them alike. Target: under 5 ms added per run at the median. The server runs
in a process of its own (``--serve PORT_FILE``, as ``serve-ag-ui`` would); CPU is this
process's (the client's) plus the server's, read from ``/proc/<pid>/stat``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ANSWER = "Salt comes from rocks on land, washed into the sea by rain and rivers."
TOKEN = "a-benchmark-token-long-enough"


def crew() -> Any:
    from agentensemble import Agent, Ensemble, Task
    from agentensemble.testing import FunctionChatModel

    agent = Agent(role="Explainer", goal="Explain", llm=FunctionChatModel(lambda m, t: ANSWER))
    task = Task(
        description="Answer {question} in one line.", expected_output="One line.", agent=agent
    )
    return Ensemble(tasks=[task])


def serve(app: Any) -> tuple[Any, int]:
    from agentensemble.serve._hardened import hardened_server

    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP (a bare
    # socket.socket() says 0, and its connections' small writes then wait 40 ms for an ACK)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    server = hardened_server(app, log_level="critical")
    threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return server, listener.getsockname()[1]


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def http_batch(client: Any, url: str, calls: int, server: int) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time() + process_cpu(server)
    for number in range(calls):
        body = {
            "threadId": f"t{number}",
            "runId": f"r{number}",
            "messages": [{"id": "m", "role": "user", "content": "why is the sea salty"}],
        }
        with client.stream("POST", url, json=body) as answer:
            last = b""
            for chunk in answer.iter_bytes():
                last = chunk
        assert b"RUN_FINISHED" in last, last[-200:]
    spent = time.process_time() + process_cpu(server) - cpu
    return (time.perf_counter() - wall) / calls, spent / calls


def direct_batch(ensemble: Any, calls: int) -> tuple[float, float]:
    async def runs() -> None:
        for _ in range(calls):
            async for _event in ensemble.astream({"question": "why is the sea salty"}):
                pass

    wall, cpu = time.perf_counter(), time.process_time()
    asyncio.run(runs())
    return (time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls


def serve_forever(port_file: str) -> None:
    """The server process: the app on a free port (written to ``port_file``), until killed."""
    from agentensemble.serve import ag_ui_app

    _server, port = serve(ag_ui_app(crew, token=TOKEN))
    Path(port_file).write_text(str(port))
    threading.Event().wait()


def main() -> None:
    import subprocess
    import tempfile

    import httpx

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--serve", metavar="PORT_FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_forever(args.serve)
        return
    port_file = Path(tempfile.mkdtemp()) / "port"
    child = subprocess.Popen([sys.executable, __file__, "--serve", str(port_file)])
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text():
            assert child.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        measure(args, f"http://127.0.0.1:{port_file.read_text()}/", child.pid, httpx)
    finally:
        child.kill()
        child.wait()


def measure(args: Any, url: str, server: int, httpx: Any) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "text/event-stream"}
    ensemble = crew()
    # TCP_NODELAY, as browsers and Node's fetch set it: httpx sends a request's head and body
    # in two writes, and without it Nagle holds the body for the server's delayed ACK (40 ms)
    nodelay = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    served: list[tuple[float, float]] = []
    direct: list[tuple[float, float]] = []
    with httpx.Client(headers=headers, timeout=30, transport=nodelay) as client:
        http_batch(client, url, 5, server)  # warm both paths
        direct_batch(ensemble, 5)
        for _ in range(args.repeats):
            served.append(http_batch(client, url, args.calls, server))
            direct.append(direct_batch(ensemble, args.calls))

    def median(values: list[tuple[float, float]], index: int) -> float:
        return statistics.median(value[index] for value in values) * 1000

    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} cores")
    print(f"{'':24}{'wall ms/run':>12}{'cpu ms/run':>12}")
    print(f"{'in process (astream)':24}{median(direct, 0):12.2f}{median(direct, 1):12.2f}")
    print(f"{'AG-UI over HTTP':24}{median(served, 0):12.2f}{median(served, 1):12.2f}")
    print(
        f"{'added by AG-UI':24}{median(served, 0) - median(direct, 0):12.2f}"
        f"{median(served, 1) - median(direct, 1):12.2f}"
    )


if __name__ == "__main__":
    main()
