"""The rules of worker leases, on SQLite and on a real Postgres: who may take a worker id at
launch, who wins a claim on a dead worker, what a heartbeat says after a takeover."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from agentensemble.durable._leases import TABLE, Lease, Leases
from agentensemble.errors import ConfigurationError

APP = "leases_test"


@pytest.fixture(params=["sqlite", "postgres"])
def leases(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Leases]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'leases.sqlite'}"
    else:
        url = request.getfixturevalue("postgres_url")
    table = Leases(url, APP)
    try:
        yield table
    finally:
        table.close()


def plant(
    leases: Leases,
    worker_id: str,
    *,
    host: str | None = None,
    pid: int | None = None,
    age_s: float = 0.0,
    claimed_by: str | None = None,
) -> None:
    """A lease as another process would have left it, ``age_s`` old by the database's clock."""
    leases.acquire(worker_id, dead_after=0.001)
    with leases.engine.begin() as connection:
        connection.execute(
            sa.text(
                f"UPDATE {TABLE} SET host = :host, pid = :pid, claimed_by = :claimed_by, "
                "heartbeat_at_ms = heartbeat_at_ms - :age WHERE app_name = :app AND "
                "worker_id = :id"
            ),
            {
                "host": host or leases.host,
                "pid": pid or os.getpid(),
                "claimed_by": claimed_by,
                "age": int(age_s * 1000),
                "app": APP,
                "id": worker_id,
            },
        )


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait(timeout=30)
    return process.pid


# -- taking a worker id at launch ------------------------------------------------------------

ELSEWHERE = "another-host.example"


@pytest.mark.parametrize(
    ("existing", "taken"),
    [
        ({}, True),  # no lease yet
        ({"pid": "self"}, True),  # this process, launching again
        ({"pid": "dead"}, True),  # a crashed process on this host: a restart keeps its runs
        ({"pid": "parent", "age_s": 60}, True),  # stale, whoever it was
        ({"pid": "parent", "claimed_by": "w9"}, True),  # already declared dead
        ({"pid": "parent"}, False),  # a live process on this host
        ({"host": ELSEWHERE, "pid": "dead"}, False),  # fresh, on a host we cannot look at
        ({"host": ELSEWHERE, "pid": "dead", "age_s": 60}, True),
    ],
)
def test_a_worker_id_is_taken_unless_a_live_process_holds_it(
    leases: Leases, existing: dict[str, object], taken: bool
) -> None:
    pid = 0
    if existing:
        pid = {"self": os.getpid, "dead": dead_pid, "parent": os.getppid}[str(existing["pid"])]()
        plant(
            leases,
            "w1",
            host=str(existing.get("host", socket.gethostname())),
            pid=pid,
            age_s=float(str(existing.get("age_s", 0))),
            claimed_by=existing.get("claimed_by"),  # type: ignore[arg-type]
        )
    if taken:
        incarnation = leases.acquire("w1", dead_after=30)
        assert leases.beat("w1", incarnation)
        found = leases.read("w1")
        assert found is not None and found.pid == os.getpid() and found.claimed_by is None
    else:
        with pytest.raises(ConfigurationError) as refused:
            leases.acquire("w1", dead_after=30)
        message = str(refused.value)
        assert "'w1'" in message and "live process" in message
        assert f"host {existing.get('host', socket.gethostname())!r} pid {pid}" in message


# -- claiming a dead worker ------------------------------------------------------------------


def test_of_two_workers_claiming_a_dead_one_exactly_one_wins(leases: Leases) -> None:
    for round_ in range(5):
        dead = f"dead{round_}"
        plant(leases, dead, pid=dead_pid(), age_s=60)
        [lease] = [
            found
            for found in leases.stale(30, besides="nobody", limit=5)
            if found.worker_id == dead
        ]
        won = race_to_claim(leases, lease, ("a", "b"))
        assert sorted(won.values()) == [False, True], won
        winner = next(name for name, ok in won.items() if ok)
        assert leases.read(dead).claimed_by == winner  # type: ignore[union-attr]
        leases.release(lease, winner)
        assert leases.read(dead) is None


def race_to_claim(leases: Leases, lease: Lease, claimers: tuple[str, ...]) -> dict[str, bool]:
    """Each claimer claims ``lease`` in its own thread, all released at once; who won."""
    barrier = threading.Barrier(len(claimers))
    won: dict[str, bool] = {}

    def claim(claimer: str) -> None:
        barrier.wait(timeout=30)
        won[claimer] = leases.claim(lease, claimer, dead_after=30)

    threads = [threading.Thread(target=claim, args=(name,)) for name in claimers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return won


def test_a_fresh_lease_is_neither_stale_nor_claimable(leases: Leases) -> None:
    plant(leases, "busy", pid=os.getppid(), age_s=0)
    plant(leases, "gone", pid=dead_pid(), age_s=60)
    stale = leases.stale(30, besides="me", limit=5)
    assert [lease.worker_id for lease in stale] == ["gone"]
    busy = leases.read("busy")
    assert busy is not None and not leases.claim(busy, "me", dead_after=30)
    assert leases.stale(30, besides="gone", limit=5) == []  # a worker never claims itself


def test_a_claimer_that_dies_before_releasing_leaves_a_lease_that_goes_stale_again(
    leases: Leases,
) -> None:
    plant(leases, "dead", pid=dead_pid(), age_s=60)
    [lease] = leases.stale(30, besides="me", limit=5)
    assert leases.claim(lease, "claimer", dead_after=30)
    assert leases.stale(30, besides="me", limit=5) == []  # the claim renewed it
    plant_age(leases, "dead", 60)
    [again] = leases.stale(30, besides="me", limit=5)
    assert leases.claim(again, "second", dead_after=30)


def test_a_worker_whose_lease_was_claimed_or_replaced_learns_it_at_its_next_beat(
    leases: Leases,
) -> None:
    mine = leases.acquire("w1", dead_after=30)
    assert leases.beat("w1", mine)
    plant_age(leases, "w1", 60)  # paused for a minute
    [lease] = leases.stale(30, besides="w2", limit=5)
    assert leases.claim(lease, "w2", dead_after=30)
    assert not leases.beat("w1", mine)  # a zombie: it must stop taking work

    restarted = leases.acquire("w1", dead_after=30)  # a claimed lease is taken at once
    assert leases.beat("w1", restarted)
    assert not leases.beat("w1", mine)
    leases.release(lease, "w2")  # the claimer's late release spares the new lease
    assert leases.read("w1") is not None


def plant_age(leases: Leases, worker_id: str, age_s: float) -> None:
    with leases.engine.begin() as connection:
        connection.execute(
            sa.text(
                f"UPDATE {TABLE} SET heartbeat_at_ms = heartbeat_at_ms - :age "
                "WHERE app_name = :app AND worker_id = :id"
            ),
            {"age": int(age_s * 1000), "app": APP, "id": worker_id},
        )


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_workers_starting_together_on_a_fresh_database_all_get_the_table(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'fresh.sqlite'}"
    else:
        url = request.getfixturevalue("postgres_url")
    barrier = threading.Barrier(4)
    opened: list[Leases] = []
    failures: list[BaseException] = []

    def open_table(worker_id: str) -> None:
        barrier.wait(timeout=30)
        try:
            table = Leases(url, APP)
            opened.append(table)
            table.acquire(worker_id, dead_after=30)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=open_table, args=(f"w{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert failures == []
        assert all(opened[0].read(f"w{n}") is not None for n in range(4))
    finally:
        for table in opened:
            table.close()


def test_a_worker_paused_anywhere_in_its_lease_writes_holds_no_lock_on_it(
    postgres_url: str,
) -> None:
    """Each lease write commits as its statement runs (autocommit): a worker paused (SIGSTOP,
    a long GC pause) right after a heartbeat's or a claim's statement holds no row lock that
    would block the worker taking it over, which used to wait for its claim forever."""
    import psycopg

    leases = Leases(postgres_url, APP)
    held: list[str] = []

    def check(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not statement.startswith("UPDATE"):
            return
        with psycopg.connect(postgres_url, autocommit=True) as other:
            try:
                other.execute(
                    f"SELECT 1 FROM {TABLE} WHERE app_name = %s FOR UPDATE NOWAIT", (APP,)
                )
            except psycopg.errors.LockNotAvailable:
                held.append(statement.split()[0])

    try:
        incarnation = leases.acquire("paused", dead_after=5)
        sa.event.listen(leases.engine, "after_cursor_execute", check)
        assert leases.beat("paused", incarnation)
        plant(leases, "gone", age_s=60)
        [stale] = [
            lease for lease in leases.stale(5, besides="x", limit=5) if lease.worker_id == "gone"
        ]
        assert leases.claim(stale, "taker", dead_after=5)
    finally:
        leases.close()
    assert held == []


def test_a_sqlite_worker_paused_anywhere_in_its_lease_writes_holds_no_write_lock(
    tmp_path: Path,
) -> None:
    """On SQLite too each lease write commits as its statement runs (autocommit): right after a
    heartbeat's, a claim's or a release's statement another connection can take the database's
    write lock at once, so a worker paused there (SIGSTOP, a long GC pause) blocks no writer
    (DBOS's checkpoints, the worker taking it over). It used to hold the lock until its COMMIT."""
    import sqlite3

    path = tmp_path / "leases.sqlite"
    leases = Leases(f"sqlite:///{path}", APP)
    held: list[str] = []
    seen: list[str] = []

    def check(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        verb = statement.split()[0]
        if verb not in ("INSERT", "UPDATE", "DELETE"):
            return
        seen.append(verb)
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
        except sqlite3.OperationalError:  # database is locked
            held.append(verb)
        finally:
            other.close()

    try:
        sa.event.listen(leases.engine, "after_cursor_execute", check)
        incarnation = leases.acquire("paused", dead_after=5)
        assert leases.beat("paused", incarnation)
        plant(leases, "gone", age_s=60)
        [stale] = [
            lease for lease in leases.stale(5, besides="x", limit=5) if lease.worker_id == "gone"
        ]
        assert leases.claim(stale, "taker", dead_after=5)
        leases.release(stale, "taker")
        assert leases.read("gone") is None
    finally:
        leases.close()
    assert {"INSERT", "UPDATE", "DELETE"} <= set(seen)
    assert held == []
