"""Cost of one run through the run API (``agentensemble serve-api``), against the same crew run in
process.

Usage: ``python benchmarks/run_api.py [--runs 30] [--repeats 7]``. The crew is one task on the
offline model (``--model scripted``: no network, so the model's own time is the scripted
model's). Per kind, ``--repeats`` batches of ``--runs`` sequential runs, interleaved so machine
load hits them alike; medians. The kinds:

- ``in_process``: ``await ensemble.arun(inputs)`` on the crew built once (the model's own time
  and the run's);
- ``api_stream``: ``POST /runs`` then ``GET /runs/{id}/events`` read to its end (the run's every
  event streamed as server-sent events) and ``GET /runs/{id}``: a front end's whole round trip;
- ``api_submit`` / ``api_read``: one ``POST /runs`` / one ``GET /runs/{id}`` alone.

The server is a subprocess on 127.0.0.1 (uvicorn through the hardened setup); the client an
``httpx.Client`` keeping its connection. CPU is measured beside wall time (this process plus the
server's, from ``/proc/<pid>/stat``), since wall time on a shared machine measures the scheduler
too. Target: under 5 ms added per run at the median.
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
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CREW = """\
model: openai/unused
tasks:
  answer:
    description: Answer {question} in one line.
    expected_output: One line.
"""
INPUTS = {"question": "why is the sea salty"}
TOKEN = "a-benchmark-token-0123456789"


def _process_cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start(crew: Path) -> tuple[subprocess.Popen[bytes], str]:
    command = [sys.executable, "-m", "agentensemble", "serve-api", str(crew), "--name", "crew"]
    process = subprocess.Popen(
        [*command, "--port", "0", "--model", "scripted"],
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "AGENTENSEMBLE_SERVE_TOKEN": TOKEN},
    )
    assert process.stderr is not None
    line = process.stderr.readline().decode()
    found = re.search(r" on (http://\S+)", line)
    if found is None:
        process.kill()
        raise SystemExit(f"serve-api did not start: {line}")
    return process, found.group(1)


def _batch(call: Callable[[], object], runs: int, server: int) -> tuple[float, float, float]:
    """Wall, this process's CPU and the server's CPU per run, in seconds."""
    client, served = time.process_time(), _process_cpu(server)
    started = time.perf_counter()
    for _ in range(runs):
        call()
    wall = time.perf_counter() - started
    return (
        wall / runs,
        (time.process_time() - client) / runs,
        (_process_cpu(server) - served) / runs,
    )


def measure(crew: Path, runs: int, repeats: int) -> dict[str, float]:
    import httpx

    from agentensemble.cli._common import use_model
    from agentensemble.cli._serving import crew_factory
    from agentensemble.config import load_crew

    ensemble = load_crew(crew)
    use_model(ensemble, "scripted")
    fresh = crew_factory(argparse.Namespace(crew=crew, model="scripted"))
    loop = asyncio.new_event_loop()
    process, base = _start(crew)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    samples: dict[str, list[tuple[float, float, float]]] = {}
    try:
        with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
            finished: list[str] = []

            def local() -> object:
                return loop.run_until_complete(ensemble.arun(INPUTS))

            def local_fresh() -> object:  # as the served crew: built afresh for every run
                return loop.run_until_complete(fresh().arun(INPUTS))

            def submit() -> str:
                answer = http.post("/runs", json={"ensemble": "crew", "inputs": INPUTS})
                assert answer.status_code == 202, answer.text
                return str(answer.json()["run_id"])

            def stream() -> object:
                run_id = submit()
                with http.stream("GET", f"/runs/{run_id}/events") as events:
                    for _ in events.iter_raw():
                        pass
                view = http.get(f"/runs/{run_id}").json()
                assert view["state"] == "succeeded", view
                finished.append(run_id)
                return view

            def read() -> object:
                return http.get(f"/runs/{finished[-1]}").json()

            kinds: dict[str, Callable[[], object]] = {
                "in_process": local,
                "in_process_fresh": local_fresh,
                "api_stream": stream,
                "api_read": read,
            }
            for call in kinds.values():  # warm up: imports, connection, caches
                _batch(call, 3, process.pid)
            for _ in range(repeats):
                for kind, call in kinds.items():
                    samples.setdefault(kind, []).append(_batch(call, runs, process.pid))
                samples.setdefault("api_submit", []).append(_submit_only(submit, runs, http))
    finally:
        process.terminate()
        process.wait(timeout=10)
        loop.close()
    medians: dict[str, float] = {}
    for kind, values in samples.items():
        medians[kind] = statistics.median(wall for wall, _, _ in values)
        medians[f"{kind}_client"] = statistics.median(cpu for _, cpu, _ in values)
        medians[f"{kind}_server"] = statistics.median(cpu for _, _, cpu in values)
    return medians


def _submit_only(submit: Callable[[], str], runs: int, http: Any) -> tuple[float, float, float]:
    """One ``POST /runs`` alone (wall only: the run it starts goes on after the answer, and is
    waited for outside the timing before the next)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run_id = submit()
        times.append(time.perf_counter() - started)
        while http.get(f"/runs/{run_id}").json()["state"] != "succeeded":
            time.sleep(0.001)
    return statistics.median(times), 0.0, 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as directory:
        crew = Path(directory) / "crew.yaml"
        crew.write_text(CREW)
        result = measure(crew, args.runs, args.repeats)
    load_after = os.getloadavg()[0]
    ms = 1000.0
    print(
        f"Measured {date.today()} on {platform.machine()} ({os.cpu_count()} cores), Python "
        f"{platform.python_version()}; {args.repeats} batches of {args.runs} runs; took "
        f"{time.perf_counter() - started:.0f} s; load average {load_before:.2f} before, "
        f"{load_after:.2f} after.\n"
    )
    print("| per run, median | wall | CPU here | CPU of the server | CPU, both | note |")
    print("|---|---|---|---|---|---|")

    def row(label: str, kind: str, note: str = "", base: str | None = None) -> None:
        wall, here, server = result[kind], result[f"{kind}_client"], result[f"{kind}_server"]
        if base is not None:
            wall, here = wall - result[base], here - result[f"{base}_client"]
        cells = [f"{value * ms:.2f} ms" for value in (wall, here, server, here + server)]
        print(f"| {label} | {' | '.join(cells)} | {note} |")

    row("same crew in process, built once, `await arun()`", "in_process", "the run's own time")
    row("in process, built afresh per run (as served)", "in_process_fresh")
    row("run API: submit, stream every event, read", "api_stream", "client: httpx")
    row("added over the fresh in-process run", "api_stream", "target < 5 ms", "in_process_fresh")
    row("one `POST /runs` (answer 202)", "api_submit", "wall only")
    row("one `GET /runs/{id}`", "api_read")


if __name__ == "__main__":
    main()
