"""The run API's book of runs on its own (``serve/_run_api_runs.py``): what it keeps of finished
runs is bounded in bytes as well as in number, oldest finished dropped first."""

from __future__ import annotations

import pytest

from agentensemble.serve import RunLimits
from agentensemble.serve._run_api_runs import RunBook

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024


async def test_finished_runs_past_the_kept_bytes_are_dropped_oldest_first() -> None:
    # each run holds ~4 MiB of events (tool calls of big pages): a thousand of them would hold
    # gigabytes for ten minutes though each is under max_events_per_run
    book = RunBook(RunLimits())
    bound = 64 * MIB  # RunLimits.max_kept_bytes
    ids = []
    for _ in range(24):
        record = book.add("crew", "alice")
        for _ in range(4):
            record.publish({"type": "ToolCallCompleted", "output": "p" * (MIB - 100)})
        record.finish("succeeded")
        ids.append(record.id)
    kept = [run_id for run_id in ids if book.get(run_id, "alice") is not None]
    assert kept == ids[-len(kept) :]  # the newest kept, the oldest dropped
    assert len(kept) * 4 * MIB <= bound + 4 * MIB
    assert len(kept) >= bound // (5 * MIB)  # dropped only past the bound
