"""Evaluations on a durable runtime (DBOS): case runs go through the runtime's queue, spread
over its workers, and none is paid twice, even when the evaluation is started again."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos")

from agentensemble.evals import EvalReport

HERE = Path(__file__).parent
CALLS_PER_RUN = 2  # the tool call, then the answer


def env(database_url: str, log: Path, **more: str) -> dict[str, str]:
    return {
        **os.environ,
        "AGENTENSEMBLE_DATABASE_URL": database_url,
        "EVAL_APP_LOG": str(log),
        "PYTHONUNBUFFERED": "1",
        **more,
    }


def evaluate_in_a_process(
    database_url: str, log: Path, eval_id: str, repeat: int, **more: str
) -> EvalReport:
    done = subprocess.run(
        [sys.executable, "_durable_eval_app.py", eval_id, str(repeat)],
        cwd=HERE,
        env=env(database_url, log, **more),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return EvalReport.model_validate_json(done.stdout.strip().splitlines()[-1])


def paid(log: Path) -> list[tuple[str, str, str]]:
    if not log.exists():
        return []
    return [tuple(line.split()) for line in log.read_text().splitlines()]  # type: ignore[misc]


def test_an_evaluation_on_a_durable_runtime_pays_for_each_run_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/runs.sqlite"
    log = tmp_path / "model.log"
    report = evaluate_in_a_process(url, log, "build-1", repeat=2)
    assert report.passed and report.eval_id == "build-1"
    assert len(report.runs) == 8
    assert all(run.duration.total_seconds() > 0 for run in report.runs)
    calls = paid(log)
    assert len(calls) == 4 * 2 * CALLS_PER_RUN
    assert collections.Counter(c for c, _, _ in calls) == {
        c: 2 * CALLS_PER_RUN for c in ("France", "Japan", "Italy", "Peru")
    }

    again = evaluate_in_a_process(url, log, "build-1", repeat=2)  # same evaluation: read back
    assert len(paid(log)) == len(calls)  # not one model call more
    assert again.to_json().count('"passed": true') == report.to_json().count('"passed": true')
    assert [c.passed for c in again.cases] == [c.passed for c in report.cases]

    evaluate_in_a_process(url, log, "build-2", repeat=1)  # a new evaluation runs anew
    assert len(paid(log)) == len(calls) + 4 * CALLS_PER_RUN


class Workers:
    """Worker processes of _durable_eval_app (the worker command), stopped at the end."""

    def __init__(self, database_url: str, log: Path) -> None:
        self.env = env(database_url, log, EVAL_APP_SLOW="0.2", EVAL_APP_CONCURRENCY="2")
        self.processes: list[subprocess.Popen[str]] = []

    def start(self, worker_id: str) -> None:
        process = subprocess.Popen(
            [sys.executable, "-m", "agentensemble", "durable", "worker", "_durable_eval_app",
             "--worker-id", worker_id],
            cwd=HERE, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.processes.append(process)
        assert process.stdout is not None
        line = process.stdout.readline()  # the worker says it is up
        assert f"worker {worker_id!r}" in line, process.stderr.read() if process.stderr else line

    def stop_all(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


@pytest.fixture
def workers(postgres_url: str, tmp_path: Path) -> Iterator[Workers]:
    pool = Workers(postgres_url, tmp_path / "model.log")
    try:
        yield pool
    finally:
        pool.stop_all()


def test_case_runs_are_spread_over_the_workers_each_paid_once(
    workers: Workers, postgres_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "model.log"
    workers.start("w1")
    workers.start("w2")
    report = evaluate_in_a_process(
        postgres_url, log, "spread", repeat=3, EVAL_APP_SLOW="0.2", EVAL_APP_CONCURRENCY="1"
    )
    assert report.passed and len(report.runs) == 12
    calls = paid(log)
    assert len(calls) == 12 * CALLS_PER_RUN  # each run paid once
    by_worker: dict[str, Any] = collections.Counter(worker for _, _, worker in calls)
    assert set(by_worker) <= {"w1", "w2", "local"}
    assert len(by_worker) >= 2, by_worker  # spread over the workers, not all in one place
    assert json.loads(report.to_json())["eval_id"] == "spread"


def test_a_crashed_workers_case_runs_are_taken_over_and_not_paid_twice(
    workers: Workers, postgres_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "model.log"
    workers.env["EVAL_APP_HANG"] = "doomed"
    workers.start("doomed")
    evaluation = subprocess.Popen(
        [sys.executable, "_durable_eval_app.py", "crash", "3"],
        cwd=HERE,
        env=env(postgres_url, log, EVAL_APP_SLOW="0.2", EVAL_APP_CONCURRENCY="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not any(t == "answer" and w == "doomed" for _, t, w in paid(log)):
            assert time.monotonic() < deadline, paid(log)
            assert evaluation.poll() is None, evaluation.communicate()
            time.sleep(0.1)
        doomed = workers.processes[0]
        doomed.kill()  # mid-run: its first model call checkpointed, its answer in flight
        doomed.wait(timeout=30)
        recovered = subprocess.run(
            [sys.executable, "-m", "agentensemble", "durable", "recover", "_durable_eval_app",
             "doomed"],
            cwd=HERE, env=env(postgres_url, log), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert recovered.returncode == 0, recovered.stderr
        out, err = evaluation.communicate(timeout=240)
    finally:
        if evaluation.poll() is None:
            evaluation.kill()
    assert evaluation.returncode == 0, err[-3000:]
    report = EvalReport.model_validate_json(out.strip().splitlines()[-1])
    assert report.passed and len(report.runs) == 12
    calls = paid(log)
    taken_over = {c for c, t, w in calls if w == "doomed" and t == "call"}
    assert taken_over, calls
    first_calls = collections.Counter(c for c, t, _ in calls if t == "call")
    assert first_calls == {c: 3 for c in ("France", "Japan", "Italy", "Peru")}  # none twice
    answers = [(c, w) for c, t, w in calls if t == "answer"]
    assert {w for c, w in answers if c in taken_over} - {"doomed"}  # finished elsewhere
