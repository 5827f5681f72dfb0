"""A dead worker's runs are taken over by the live ones, with no `recover` command: real worker
processes on a real Postgres, killed with SIGKILL (or paused with SIGSTOP) mid-run."""

from __future__ import annotations

import collections
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _workers import HERE, Workers, handled

from agentensemble.durable import DurableClient

# short enough for a quick test, long enough that a live worker starved of CPU on a loaded
# 2-core machine (seconds without a heartbeat) is not declared dead beside the killed one
FAST_LEASES = {"AGENTENSEMBLE_HEARTBEAT_INTERVAL": "0.3", "AGENTENSEMBLE_DEAD_AFTER": "6"}


@pytest.fixture
def client(postgres_url: str) -> Iterator[DurableClient]:
    found = DurableClient(postgres_url)
    try:
        yield found
    finally:
        found.close()


def wait_until_pending(client: DurableClient, run_ids: list[str], timeout: float = 60) -> None:
    """Until every run is PENDING: a worker has dequeued it and runs it."""
    deadline = time.monotonic() + timeout
    while any(client.status(run_id) != "PENDING" for run_id in run_ids):
        assert time.monotonic() < deadline, [client.status(run_id) for run_id in run_ids]
        time.sleep(0.05)


def wait_for_file(path: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def executor_of(client: DurableClient, run_id: str) -> str | None:
    [status] = client._client.list_workflows(workflow_ids=[run_id], load_input=False)
    return status.executor_id


def test_a_killed_workers_runs_are_taken_over_by_the_live_ones_without_recover(
    postgres_url: str, client: DurableClient, tmp_path: Path
) -> None:
    log, model_log = tmp_path / "log.txt", tmp_path / "model.txt"
    # every worker with 3 slots: DBOS keeps worker_concurrency in the queue's row, which each
    # worker's launch overwrites and every worker reloads at each poll, so w2 starting with 4
    # would let w1 take a fourth run before it is killed
    workers = Workers(
        postgres_url,
        log,
        QUEUE_APP_MODEL_LOG=str(model_log),
        QUEUE_APP_CONCURRENCY="3",
        **FAST_LEASES,
    )
    try:
        workers.start("w1", QUEUE_APP_SLOW="600")
        held = [client.submit("record", {"item": f"slow-{n}"}) for n in range(3)]
        wait_until_pending(client, held)  # w1 holds all three, inside the slow tool call
        workers.start("w2")
        workers.start("w3")
        others = [client.submit("record", {"item": f"item{n}"}) for n in range(9)]

        workers.kill("w1")
        outputs = [client.result(run_id, timeout=120) for run_id in [*held, *others]]
        finishers = {run_id: executor_of(client, run_id) for run_id in held}
    finally:
        workers.stop_all()

    assert [output.raw for output in outputs] == ["done"] * 12
    records = handled(log)
    items = [f"slow-{n}" for n in range(3)] + [f"item{n}" for n in range(9)]
    assert sorted(item for item, _ in records) == sorted(items)  # each tool call ran once
    assert {worker for item, worker in records if item.startswith("slow")} <= {"w2", "w3"}
    assert set(finishers.values()) <= {"w2", "w3"}, finishers
    # model requests that had completed on w1 were not sent again: one call and one answer each
    lines = [line.split() for line in model_log.read_text().splitlines()]
    requests = collections.Counter((turn, item) for turn, item, _ in lines)
    assert requests == {(turn, item): 1 for turn in ("call", "answer") for item in items}
    calls_on_w1 = {item for _, item, worker in lines if worker == "w1"}
    assert calls_on_w1 == {f"slow-{n}" for n in range(3)}
    told = workers.stderr("w2") + workers.stderr("w3")
    assert "worker_taken_over" in told and "dead_worker=w1" in told, told


def test_a_worker_restarted_under_its_id_within_dead_after_is_not_taken_over(
    postgres_url: str, client: DurableClient, tmp_path: Path
) -> None:
    log = tmp_path / "log.txt"
    dead_after = 10.0  # longer than a restart, shorter than this test
    workers = Workers(
        postgres_url,
        log,
        AGENTENSEMBLE_HEARTBEAT_INTERVAL="0.2",
        AGENTENSEMBLE_DEAD_AFTER=str(dead_after),
    )
    try:
        workers.start("w1", QUEUE_APP_SLOW="600", QUEUE_APP_CONCURRENCY="2")
        held = [client.submit("record", {"item": f"slow-{n}"}) for n in range(2)]
        wait_until_pending(client, held)
        workers.start("w2")  # alive, looking for dead workers all along

        workers.kill("w1")
        killed = time.monotonic()
        workers.start("w1", QUEUE_APP_SLOW="0")
        assert time.monotonic() - killed < dead_after, "the restart took longer than dead_after"
        outputs = [client.result(run_id, timeout=60) for run_id in held]
        while time.monotonic() - killed < dead_after + 2:  # w2 had time to claim w1's lease
            time.sleep(0.2)
    finally:
        workers.stop_all()

    assert [output.raw for output in outputs] == ["done", "done"]
    # w1 resumed its runs at launch: DBOS puts them back on the queue, where it or w2 took
    # them; nobody declared w1 dead, and each tool call ran once
    assert sorted(item for item, _ in handled(log)) == ["slow-0", "slow-1"]
    assert "worker_taken_over" not in workers.stderr("w2")


def test_a_second_live_process_under_the_same_worker_id_is_refused_at_launch(
    postgres_url: str, tmp_path: Path
) -> None:
    workers = Workers(postgres_url, tmp_path / "log.txt", **FAST_LEASES)
    try:
        first = workers.start("w1")
        second = workers.spawn("w1")
        _, err = second.communicate(timeout=120)
        assert first.poll() is None  # the first one goes on
    finally:
        workers.stop_all()

    assert second.returncode == 2, err
    assert "worker id 'w1' is in use by a live process" in err
    assert f"host {socket.gethostname()!r} pid {first.pid}" in err


def test_recover_refuses_a_live_worker_unless_forced(
    postgres_url: str, client: DurableClient, tmp_path: Path
) -> None:
    workers = Workers(postgres_url, tmp_path / "log.txt")
    try:
        workers.start("w1")

        def recover(*extra: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                workers.command("recover", "_queue_app", "w1", *extra),
                cwd=HERE,
                env=workers.env,
                capture_output=True,
                text=True,
                timeout=120,
            )

        refused = recover()
        forced = recover("--force")
    finally:
        workers.stop_all()

    assert refused.returncode == 2, refused.stderr
    assert "worker 'w1' is alive" in refused.stderr and "--force" in refused.stderr
    assert forced.returncode == 0, forced.stderr
    assert "took over 0 run(s) of worker 'w1'" in forced.stdout


def test_a_paused_worker_declared_dead_stops_and_its_late_step_is_refused(
    postgres_url: str, client: DurableClient, tmp_path: Path
) -> None:
    log = tmp_path / "log.txt"
    gate = tmp_path / "gate"  # the zombie's tool call waits for this file (none for w2's)
    workers = Workers(
        postgres_url, log, QUEUE_APP_MODEL_LOG=str(tmp_path / "model.txt"), **FAST_LEASES
    )
    try:
        zombie = workers.start("zombie", QUEUE_APP_GATE=str(gate), QUEUE_APP_CONCURRENCY="1")
        [run_id] = [client.submit("record", {"item": "slow-z"})]
        wait_for_file(Path(f"{gate}.entered"))  # inside the tool call: no sleep to outrun
        workers.kill("zombie", signal.SIGSTOP)  # paused inside the tool call, lease ageing
        workers.start("w2")
        assert client.result(run_id, timeout=120).raw == "done"  # w2 took it over

        gate.touch()  # the zombie's tool call may end once it wakes: late, after the takeover
        workers.kill("zombie", signal.SIGCONT)  # wakes, finishes its tool call late
        zombie.wait(timeout=60)
        steps = client._client.list_workflow_steps(run_id)
    finally:
        workers.stop_all()

    assert zombie.returncode == 3  # it found its lease gone and stopped taking work
    told = workers.stderr("zombie")
    assert "was declared dead by another worker" in told
    # the tool's side effect may repeat (the zombie was inside it), its checkpoint did not:
    # the recorded step result is w2's, and the run ended once, by w2
    records = handled(log)
    assert records.count(("slow-z", "w2")) == 1
    assert set(records) <= {("slow-z", "w2"), ("slow-z", "zombie")}
    answers = [
        line for line in (tmp_path / "model.txt").read_text().splitlines() if "answer" in line
    ]
    assert answers == ["answer slow-z w2"]  # the zombie's refused step ended its copy of the run
    tool_outputs = [
        step["output"].result.output for step in steps if "record" in step["function_name"]
    ]
    assert tool_outputs == ["recorded slow-z by w2"], steps
    assert executor_of(client, run_id) == "w2"


def test_runs_of_another_application_version_are_left_for_a_worker_of_that_version(
    postgres_url: str, client: DurableClient, tmp_path: Path
) -> None:
    import psycopg

    from agentensemble.durable._leases import Leases

    workers = Workers(postgres_url, tmp_path / "log.txt", **FAST_LEASES)
    leases = Leases(postgres_url, "agentensemble")
    try:
        workers.start("w1", QUEUE_APP_SLOW="600", QUEUE_APP_CONCURRENCY="1")
        run_id = client.submit("record", {"item": "slow-v"})
        wait_until_pending(client, [run_id])
        with psycopg.connect(postgres_url, autocommit=True) as connection:  # older code's run
            connection.execute(
                "UPDATE dbos.workflow_status SET application_version = 'older' "
                "WHERE workflow_uuid = %s",
                (run_id,),
            )
        workers.start("w2")
        workers.kill("w1")
        deadline = time.monotonic() + 60
        while (lease := leases.read("w1")) is None or lease.claimed_by != "w2":
            assert time.monotonic() < deadline, lease
            time.sleep(0.05)
        workers.kill("w2", signal.SIGTERM)  # finishes its heartbeat, then stops
        workers.processes["w2"].wait(timeout=60)
        kept = leases.read("w1")
    finally:
        workers.stop_all()
        leases.close()

    told = workers.stderr("w2")
    assert "worker_runs_left_for_another_version" in told and "runs=1" in told, told
    assert client.status(run_id) == "PENDING" and executor_of(client, run_id) == "w1"
    assert kept is not None and kept.claimed_by == "w2"  # stale again soon, for another taker


def test_the_worker_command_passes_its_liveness_options_to_the_runtime(
    postgres_url: str, tmp_path: Path
) -> None:
    workers = Workers(postgres_url, tmp_path / "log.txt")
    refused = subprocess.run(
        workers.command(
            "worker", "_queue_app", "--worker-id", "w1", "--heartbeat-interval", "1",
            "--dead-after", "2",
        ),
        cwd=HERE,
        env=workers.env,
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert refused.returncode == 2
    assert "dead_after (2.0 s) must be at least 3 x heartbeat_interval (1.0 s)" in refused.stderr
