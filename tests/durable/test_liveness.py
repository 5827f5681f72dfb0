"""The liveness settings and the heartbeat thread of a worker (``_liveness.py``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from test_leases import dead_pid, plant, plant_age

from agentensemble.durable import DurableRuntime
from agentensemble.durable._leases import Leases
from agentensemble.durable._liveness import Heartbeat, Liveness, seconds, validate_intervals
from agentensemble.errors import ConfigurationError

# -- intervals -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("heartbeat_interval", "dead_after", "error"),
    [
        (5.0, 30.0, None),
        (0.2, 0.6, None),  # exactly three heartbeats
        (0.2, 0.59, "at least 3 x heartbeat_interval"),
        (5.0, 10.0, "at least 3 x heartbeat_interval"),
        (0.0, 30.0, "heartbeat_interval must be a positive"),
        (-1.0, 30.0, "heartbeat_interval must be a positive"),
        (5.0, 0.0, "dead_after must be a positive"),
        (5.0, float("inf"), "dead_after must be a positive"),
        (float("nan"), 30.0, "heartbeat_interval must be a positive"),
    ],
)
def test_dead_after_must_be_positive_and_at_least_three_heartbeats(
    heartbeat_interval: float, dead_after: float, error: str | None
) -> None:
    if error is None:
        validate_intervals(heartbeat_interval, dead_after)
    else:
        with pytest.raises(ConfigurationError, match=error):
            validate_intervals(heartbeat_interval, dead_after)


def test_the_runtime_refuses_bad_intervals_before_touching_the_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'never.sqlite'}"
    with pytest.raises(ConfigurationError, match="at least 3 x heartbeat_interval"):
        DurableRuntime(url, heartbeat_interval=5, dead_after=10)
    assert not (tmp_path / "never.sqlite").exists()


@pytest.mark.parametrize(
    ("given", "environment", "expected"),
    [(2.0, "9", 2.0), (None, "9", 9.0), (None, None, 5.0), (None, "", 5.0)],
)
def test_an_interval_comes_from_the_argument_then_the_environment_then_the_default(
    monkeypatch: pytest.MonkeyPatch, given: float | None, environment: str | None, expected: float
) -> None:
    if environment is None:
        monkeypatch.delenv("AGENTENSEMBLE_HEARTBEAT_INTERVAL", raising=False)
    else:
        monkeypatch.setenv("AGENTENSEMBLE_HEARTBEAT_INTERVAL", environment)
    assert seconds(given, "AGENTENSEMBLE_HEARTBEAT_INTERVAL", 5.0) == expected


def test_an_interval_in_the_environment_that_is_no_number_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTENSEMBLE_DEAD_AFTER", "soon")
    with pytest.raises(ConfigurationError, match=r"\$AGENTENSEMBLE_DEAD_AFTER .* 'soon'"):
        seconds(None, "AGENTENSEMBLE_DEAD_AFTER", 30.0)


def test_a_worker_declared_dead_learns_it_at_its_next_heartbeat_and_starts_no_run(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'liveness.sqlite'}"
    heartbeat = Heartbeat(url, "leases_test", "w1", heartbeat_interval=0.05, dead_after=0.15)
    other = Leases(url, "leases_test")
    heartbeat.start()
    try:
        heartbeat.refuse_if_lost()  # alive: nothing to refuse
        deadline = time.monotonic() + 30
        while True:  # claim it between two of its beats, as a worker that saw it stale would
            plant_age(other, "w1", 60)
            lease = other.read("w1")
            if lease is not None and other.claim(lease, "w2", dead_after=0.15):
                break
            assert time.monotonic() < deadline
        assert heartbeat.lost.wait(timeout=30)
        with pytest.raises(ConfigurationError, match="'w1' lost its lease"):
            heartbeat.refuse_if_lost()
    finally:
        heartbeat.stop()
        other.close()


@pytest.mark.parametrize(
    ("worker", "lease", "force", "refused"),
    [
        ("me", None, False, "'me' is this process"),
        ("me", None, True, "'me' is this process"),  # never, even forced
        ("w2", "live", False, "worker 'w2' is alive"),
        ("w2", "live", True, None),
        ("w2", "crashed", False, None),  # its pid is gone on this host
        ("w2", None, False, None),  # never launched with a lease (or already taken over)
    ],
)
def test_recover_is_refused_for_this_worker_and_for_a_live_one_unless_forced(
    tmp_path: Path, worker: str, lease: str | None, force: bool, refused: str | None
) -> None:
    url = f"sqlite:///{tmp_path / 'liveness.sqlite'}"
    liveness = Liveness(url, "leases_test", "me", 1.0, 30.0, take_over=False)
    other = Leases(url, "leases_test")
    try:
        if lease is not None:
            plant(other, worker, pid=os.getppid() if lease == "live" else dead_pid())
        with liveness.launching():
            pass  # DBOS would launch here
        if refused is None:
            liveness.check_recoverable(worker, force=force)
        else:
            with pytest.raises(ConfigurationError, match=refused):
                liveness.check_recoverable(worker, force=force)
    finally:
        liveness.stop()
        other.close()
