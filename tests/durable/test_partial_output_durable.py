"""``PartialOutput`` from a durable run: ``DurableRuntime.astream`` of a typed task yields the
fields so far as ``Ensemble.astream`` does (the app runs in its own process, on SQLite)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

APP = Path(__file__).with_name("_typed_stream_app.py")


def test_a_durable_typed_task_streams_its_fields_so_far(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(APP), f"sqlite:///{tmp_path}/runs.sqlite", "typed-run-1"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    partials = [
        json.loads(line[len("partial ") :]) for line in lines if line.startswith("partial ")
    ]
    assert partials[0] == ["r", {"title": "Durable"}]
    assert ["r", {"title": "Durable report", "score": 4}] in partials
    assert partials[-1] == ["r", {"title": "Durable report", "score": 4, "tags": ["a", "b"]}]
    (final,) = [json.loads(line[len("final ") :]) for line in lines if line.startswith("final ")]
    assert final == {"title": "Durable report", "score": 4, "tags": ["a", "b"]}
