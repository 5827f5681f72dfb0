"""Worker subprocesses of tests/durable/_queue_app.py (the worker command), stopped at the end;
shared by the worker and takeover tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


class Workers:
    """Worker processes on ``database_url``; ``env`` is for all, ``start(**env)`` for one."""

    def __init__(self, database_url: str, log: Path, **env: str) -> None:
        # the workers import this checkout's package, whatever else the interpreter's path holds
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        self.env = {
            **os.environ,
            "PYTHONPATH": path,
            "AGENTENSEMBLE_DATABASE_URL": database_url,
            "QUEUE_APP_LOG": str(log),
            "PYTHONUNBUFFERED": "1",
            **env,
        }
        self.processes: dict[str, subprocess.Popen[str]] = {}
        self.stopped: list[subprocess.Popen[str]] = []  # killed or replaced, kept for stderr

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "agentensemble", "durable", *args]

    def spawn(self, worker_id: str, **env: str) -> subprocess.Popen[str]:
        """Start a worker process without waiting for it."""
        return subprocess.Popen(
            self.command("worker", "_queue_app", "--worker-id", worker_id),
            cwd=HERE,
            env={**self.env, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def start(self, worker_id: str, **env: str) -> subprocess.Popen[str]:
        """Start a worker and wait until it says it is up (DBOS launched)."""
        process = self.spawn(worker_id, **env)
        if worker_id in self.processes:
            self.stopped.append(self.processes[worker_id])
        self.processes[worker_id] = process
        assert process.stdout is not None
        line = process.stdout.readline()
        assert f"worker {worker_id!r}" in line, process.stderr.read() if process.stderr else line
        return process

    def kill(self, worker_id: str, signum: int = signal.SIGKILL) -> None:
        self.processes[worker_id].send_signal(signum)
        if signum == signal.SIGKILL:
            self.processes[worker_id].wait(timeout=30)

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.terminate()
        for process in [*self.processes.values(), *self.stopped]:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)

    def stderr(self, worker_id: str) -> str:
        """What a stopped worker wrote on stderr (its log)."""
        process = self.processes[worker_id]
        assert process.poll() is not None, "stop the worker first"
        return process.stderr.read() if process.stderr else ""


def handled(log: Path) -> list[tuple[str, str]]:
    """(item, worker) for each side effect of the ``record`` tool, in order."""
    if not log.exists():
        return []
    return [tuple(line.split()) for line in log.read_text().splitlines()]  # type: ignore[misc]
