"""docs/durable.md's blocks run as pasted and leave nothing running: each shuts its runtime down
(``with runtime:``, or ``shutdown()``), as a reader's script must, so no DBOS thread, queue
poller or worker heartbeat outlives the block that started it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import agentensemble

from ._blocks import blocks_of

ROOT = Path(agentensemble.__file__).absolute().parent.parent
PAGE = ROOT / "docs" / "durable.md"

# runs the blocks one after another in a fresh folder, then lists the threads still alive
RUNNER = """
import json, sys, threading
blocks = json.load(sys.stdin)
for where, code in blocks:
    exec(compile(code, where, "exec"), {"__name__": "__docs__"})
print(json.dumps(sorted(t.name for t in threading.enumerate())))
"""


def test_every_block_of_the_durable_page_runs_but_the_one_needing_postgres() -> None:
    blocks = blocks_of(PAGE, ROOT)
    skipped = [block.code for block in blocks if block.no_run]
    assert len(skipped) == 1 and "postgresql://" in skipped[0]  # said so in the prose too
    assert len(blocks) - len(skipped) >= 6


def test_the_durable_blocks_leave_no_runtime_running(tmp_path: Path) -> None:
    runnable = [(block.where, block.code) for block in blocks_of(PAGE, ROOT) if not block.no_run]
    assert not any(block.continues for block in blocks_of(PAGE, ROOT))  # each stands alone
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps(runnable),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    alive = json.loads(done.stdout.strip().splitlines()[-1])
    assert [name for name in alive if name not in ("MainThread", "agentensemble-loop")] == []
