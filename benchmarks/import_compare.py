"""A script's first line, and that line plus the first run, in this checkout against a baseline.

    python benchmarks/import_compare.py --baseline main --rounds 15
    python benchmarks/import_compare.py --baseline main --instructions

Each sample is a fresh interpreter (bytecode cached; the caches are written before counting).
Statements: the dependency floor (``import pydantic, structlog, tenacity, httpx``), what the line
needs before any module of ours (pydantic, structlog and one model with a ``Field``), the line
``from agentensemble import Agent, Ensemble, Task, tool``, and the line followed by building and
running a one-task ensemble on a scripted ``ChatModel`` with one tool (what moved from the line
to the first run shows there).

Default: CPU (``time.process_time``) and wall time, the two trees alternating round by round;
medians with min-max, each over the floor of its own round. ``--instructions``: instructions
executed (valgrind's callgrind, one run per statement and tree, the interpreter's start-up
subtracted), which the load of a shared machine does not move; needs ``valgrind``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from core_compare import ROOT, unpack  # beside this file

FIRST_RUN = """
from agentensemble.llm.types import ChatResponse, ToolCall

class Scripted:
    model = "scripted"

    async def complete(self, messages, **_):
        if messages[-1]["role"] == "tool":
            return ChatResponse(content="done", finish_reason="stop")
        call = ToolCall(id="c1", name="echo", arguments='{"value": "x"}')
        return ChatResponse(tool_calls=[call], finish_reason="tool_calls")

@tool
def echo(value: str) -> str:
    \"\"\"Echo a value.\"\"\"
    return value

agent = Agent(role="r", goal="g", tools=[echo], llm=Scripted())
Ensemble(tasks=[Task(description="d", agent=agent)]).run()
"""
LINE = "from agentensemble import Agent, Ensemble, Task, tool"
STATEMENTS = {
    "floor": "import pydantic, structlog, tenacity, httpx",
    "needed": (
        "import pydantic, structlog\nfrom pydantic import BaseModel, Field\n"
        "class Model(BaseModel):\n    x: int = Field(default=1)"
    ),
    "line": LINE,
    "line+run": LINE + "\n" + FIRST_RUN,
}
LABELS = {
    "floor": "`import pydantic, structlog, tenacity, httpx` (the floor)",
    "needed": "pydantic + structlog + one model with a `Field` (before any module of ours)",
    "line": f"`{LINE}`",
    "line+run": "the line, then a first 1-tool run on a scripted ChatModel",
}
TIMED = (
    "import sys, time; sys.path.insert(0, {tree!r}); "
    "t = time.perf_counter(); c = time.process_time()\n{statement}\n"
    "print(time.perf_counter() - t, time.process_time() - c)"
)


def env() -> dict[str, str]:
    drop = ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")
    return {k: v for k, v in os.environ.items() if k not in drop} | {"PYTHONHASHSEED": "0"}


def sample(tree: Path, statement: str) -> tuple[float, float]:
    code = TIMED.format(tree=str(tree), statement=statement)
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env(),
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
    )
    wall, cpu = done.stdout.split()[-2:]
    return float(wall), float(cpu)


def instructions(tree: Path, statement: str) -> int:
    code = f"import sys; sys.path.insert(0, {str(tree)!r})\n{statement}"
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-c",
            code,
        ],
        env=env(),
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
    )
    line = next(x for x in done.stderr.splitlines() if "Collected" in x)
    return int(line.split()[-1])


def fmt(values: list[float], scale: float = 1e3, digits: int = 1) -> str:
    v = [x * scale for x in values]
    return f"{statistics.median(v):.{digits}f} ({min(v):.{digits}f}-{max(v):.{digits}f})"


def timed(trees: dict[str, Path], rounds: int) -> None:
    data: dict[tuple[str, str], list[tuple[float, float]]] = {}
    order = list(trees.items())
    for number in range(rounds):
        for name, tree in order if number % 2 == 0 else reversed(order):
            for key, statement in STATEMENTS.items():
                data.setdefault((name, key), []).append(sample(tree, statement))
    print("| statement | unit | before | after | after / before |\n|---|---|---|---|---|")
    for key in STATEMENTS:
        for unit, index in (("CPU", 1), ("wall", 0)):
            cells, medians = [], []
            for name in trees:
                ours = [s[index] for s in data[(name, key)]]
                floor = [s[index] for s in data[(name, "floor")]]
                ratios = [a / b for a, b in zip(ours, floor, strict=True)]
                medians.append(statistics.median(ours))
                cells.append(f"{fmt(ours)} ms = {fmt(ratios, 1, 2)}x floor")
            change = medians[1] / medians[0]
            print(f"| {LABELS[key]} | {unit} | {cells[0]} | {cells[1]} | {change:.2f}x |")


def counted(trees: dict[str, Path]) -> None:
    jobs = {(name, "start"): (tree, "pass") for name, tree in trees.items()}
    for name, tree in trees.items():
        jobs |= {(name, key): (tree, statement) for key, statement in STATEMENTS.items()}
    with ThreadPoolExecutor(max_workers=2) as pool:  # two valgrinds at a time (slow: ~1 min each)
        found = dict(
            zip(jobs, pool.map(lambda job: instructions(*job), jobs.values()), strict=True)
        )
    counts = {(name, key): n - found[(name, "start")] for (name, key), n in found.items()}
    print("| statement | before | after | after / before |\n|---|---|---|---|")
    for key in STATEMENTS:
        cells = []
        for name in trees:
            count, floor = counts[(name, key)], counts[(name, "floor")]
            cells.append(f"{count / 1e6:.1f} M = {count / floor:.3f}x floor")
        change = counts[("after", key)] / counts[("before", key)]
        print(f"| {LABELS[key]} | {cells[0]} | {cells[1]} | {change:.3f}x |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", default="main", help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--instructions", action="store_true", help="count with callgrind")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": unpack(args.baseline, Path(tmp)), "after": ROOT}
        for tree in trees.values():  # bytecode caches written, not counted
            for statement in STATEMENTS.values():
                sample(tree, statement)
        load = os.getloadavg()
        if args.instructions:
            counted(trees)
        else:
            timed(trees, args.rounds)
    after = os.getloadavg()
    print(f"\nbaseline {args.baseline}; load average {load[0]:.1f} -> {after[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
