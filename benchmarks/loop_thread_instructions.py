"""Instructions a 1-tool ``run()`` costs on the loop thread, counted by callgrind.

The count SEAMS.md (1.5) and RESULTS.md read: a process makes 30 warm-up runs of
``runtime_bench._one_tool_ensemble`` and then ``--runs`` more; a second process makes only the
warm-up. Both run under ``valgrind --tool=callgrind --separate-threads=yes``; the difference of
the main thread's totals (the thread that runs the loop; the sync tool runs on a pool thread),
divided by ``--runs``, is one run. Counts repeat to about +-5K a run.

    python benchmarks/loop_thread_instructions.py    # 100 runs, prints K instructions a run
    python benchmarks/loop_thread_instructions.py --runs 200 --repeat 2
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WARM_UP = 30

CHILD = """
import sys
sys.path.insert(0, {here!r})
from runtime_bench import _one_tool_ensemble
ensemble = _one_tool_ensemble()
for _ in range({warm}):
    ensemble.run()
for _ in range(int(sys.argv[1])):
    ensemble.run()
"""


def main_thread_instructions(runs: int) -> int:
    """Callgrind's instruction total of the main thread of a child making ``runs`` runs."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "cg.out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--separate-threads=yes",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-c",
                CHILD.format(here=str(HERE), warm=WARM_UP),
                str(runs),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        first = sorted(Path(folder).glob("cg.out-01"))
        if not first:
            raise SystemExit("callgrind wrote no file for thread 1")
        for line in first[0].read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise SystemExit("no totals line in callgrind's output")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=1, help="pairs of processes to count")
    args = parser.parse_args()
    for _ in range(args.repeat):
        base = main_thread_instructions(0)
        total = main_thread_instructions(args.runs)
        print(f"{(total - base) / args.runs / 1000:,.1f}K instructions a run")


if __name__ == "__main__":
    main()
