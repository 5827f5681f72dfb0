"""Retention: finished runs are pruned by age and by count per ensemble, from Python, the command
line and as a worker setting; a run in progress or waiting for a review is never pruned."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from test_review_suspend import start, wait_for_review

from agentensemble.cli.durable_command import duration
from agentensemble.durable import DurableClient, Retention
from agentensemble.durable._retention import runs_to_prune
from agentensemble.errors import ConfigurationError

HOUR_MS = 3_600_000


def run(run_id: str, ensemble: str, hours_ago: float, status: str = "SUCCESS") -> Any:
    at = 100 * HOUR_MS - hours_ago * HOUR_MS
    return SimpleNamespace(
        workflow_id=run_id,
        status=status,
        created_at=at,
        updated_at=at,
        input=SimpleNamespace(args=(ensemble, {})),
    )


RUNS = [
    run("a1", "a", 1),
    run("a2", "a", 2),
    run("a3", "a", 30),
    run("b1", "b", 3),
    run("b2", "b", 50),
    run("a-waiting", "a", 70, status="PENDING"),
    run("a-queued", "a", 80, status="ENQUEUED"),
]


@pytest.mark.parametrize(
    ("keep_last", "older_than", "ensemble", "pruned"),
    [
        (2, None, None, ["a3"]),  # per ensemble: a keeps a1 a2, b keeps both
        (1, None, None, ["a2", "a3", "b2"]),
        (0, None, None, ["a1", "a2", "a3", "b1", "b2"]),
        (None, timedelta(hours=24), None, ["a3", "b2"]),
        (2, timedelta(hours=1, minutes=30), None, ["a2", "a3", "b1", "b2"]),
        (1, None, "b", ["b2"]),
        (5, timedelta(days=30), None, []),
    ],
)
def test_the_retention_rule(
    keep_last: int | None, older_than: timedelta | None, ensemble: str | None, pruned: list[str]
) -> None:
    doomed = runs_to_prune(
        RUNS, keep_last=keep_last, older_than=older_than, ensemble=ensemble, now_ms=100 * HOUR_MS
    )
    assert sorted(doomed) == pruned  # never a-waiting nor a-queued, whatever the rule


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "needs keep_last, older_than, or both"),
        ({"keep_last": -1}, "keep_last must be >= 0"),
        ({"older_than": timedelta(0)}, "older_than must be positive"),
        ({"keep_last": 1, "every": timedelta(0)}, "every must be positive"),
    ],
)
def test_a_retention_that_means_nothing_is_refused(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        Retention(**settings)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("7d", 604800), ("12h", 43200), ("30m", 1800), ("90", 90), ("2w", 1209600)],
)
def test_ages_on_the_command_line(text: str, seconds: float) -> None:
    assert duration(text).total_seconds() == seconds


RUNS_APP = """
import json, sys
from datetime import timedelta
from agentensemble import Ensemble, Task
from agentensemble.durable import DurableRuntime, Retention

db, echoes, others, keep = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
retention = None if keep == "-" else Retention(keep_last=int(keep), every=timedelta(seconds=0.1))
runtime = DurableRuntime(db, retention=retention)
for name in ("echo", "other"):
    runtime.register(name, lambda: Ensemble(tasks=[Task(description="Echo {x}",
                                                        handler=lambda ctx: ctx.inputs["x"])]))
runtime.launch()
for i in range(echoes):
    runtime.run("echo", {"x": str(i)}, run_id=f"echo-{i}")
for i in range(others):
    runtime.run("other", {"x": str(i)}, run_id=f"other-{i}")
if retention is not None:  # the worker prunes by itself: wait until it has
    import time
    deadline = time.monotonic() + 60
    while len(runtime.list_runs(status="SUCCESS")) > 2 * int(keep):
        assert time.monotonic() < deadline, "the worker never pruned"
        time.sleep(0.05)
print(json.dumps(sorted(r.run_id for r in runtime.list_runs())))
runtime.shutdown()
"""


def run_app(db: str, echoes: int, others: int, keep: str = "-") -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", RUNS_APP, db, str(echoes), str(others), keep],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    return list(json.loads(result.stdout.strip().splitlines()[-1]))


def test_pruning_keeps_the_newest_per_ensemble_and_never_a_waiting_review(
    any_database: str,
) -> None:
    run_app(any_database, echoes=4, others=2)
    waiting = start(any_database, "start", "announce-r")  # a run waiting for a human
    client = DurableClient(any_database)
    try:
        wait_for_review(client, "announce-r")
        waiting.kill()
        waiting.wait(timeout=30)
        assert client.prune(keep_last=1) == 4  # echo-0..2 and other-0
        assert sorted(r.run_id for r in client.list_runs()) == ["announce-r", "echo-3", "other-1"]
        assert client.pending_reviews("announce-r")  # its review is still there to decide
        assert client.prune(keep_last=0, ensemble="other") == 1
        assert client.prune(older_than=timedelta(days=1)) == 0
    finally:
        client.close()


def test_pruning_from_the_command_line(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    run_app(db, echoes=3, others=0)

    def prune(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agentensemble", "durable", "prune", *args, "--database", db],
            capture_output=True,
            text=True,
            timeout=90,
        )

    refused = prune()
    assert refused.returncode == 2 and "--keep-last N, --older-than AGE" in refused.stderr
    bad_age = prune("--older-than", "soon")
    assert bad_age.returncode == 2 and "'soon' is not an age" in bad_age.stderr
    done = prune("--keep-last", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "pruned 2 finished run(s)"
    client = DurableClient(db, prepare=False)
    try:
        assert [r.run_id for r in client.list_runs()] == ["echo-2"]
    finally:
        client.close()


def test_a_worker_with_retention_prunes_by_itself(tmp_path: Path) -> None:
    left = run_app(f"sqlite:///{tmp_path}/runs.sqlite", echoes=5, others=3, keep="2")
    assert left == ["echo-3", "echo-4", "other-1", "other-2"]
