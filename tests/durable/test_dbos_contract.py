"""What the durable runtime relies on DBOS to do without DBOS promising it (``durable/_dbos.py``).

Each test pins one internal's semantics on the installed DBOS, so an upgrade that changes one
fails here, by name, instead of in production:

- D3: the read a fresh execution skips has no other duty than "what is recorded for this step,
  and is the run cancelled" (read from DBOS's own source);
- D16: a run queued on a queue no worker reads is never taken, and ``resume_workflow(...,
  queue_name=...)`` hands it to a real queue;
- D17: DBOS's queue thread is named ``queue-worker-<queue>`` and waits between polls on one of
  ``background_thread_stop_events``;
- D18: ``DBOS._recover_pending_workflows`` takes the executor ids it recovers for.

And the start-up shape check names the DBOS version and the missing piece.
"""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from dbos import DBOS, _context, _core, _queue, _recovery, _sys_db

from agentensemble.durable import _dbos


def _tree(function: Any) -> ast.AST:
    return ast.parse(textwrap.dedent(inspect.getsource(function)))


def _called(tree: ast.AST) -> set[str]:
    """The names of what a function's source calls (``self.engine.begin`` -> ``begin``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            target = node.func
            if isinstance(target, ast.Attribute):
                names.add(target.attr)
            elif isinstance(target, ast.Name):
                names.add(target.id)
    return names


def _raised(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            func = node.exc.func
            found.add(func.id if isinstance(func, ast.Name) else ast.unparse(func))
    return found


@pytest.fixture
def fresh_check() -> Iterator[None]:
    """``check_dbos`` runs once per process: forget its answer around a test that breaks DBOS."""
    _dbos.check_dbos.cache_clear()
    yield
    _dbos.check_dbos.cache_clear()


# -- the start-up shape check ------------------------------------------------------------------


def test_the_installed_dbos_has_every_internal_the_runtime_uses(fresh_check: None) -> None:
    _dbos.check_dbos()


@pytest.mark.parametrize(
    ("owner", "name", "named"),
    [
        (DBOS, "_recover_pending_workflows", "_recover_pending_workflows"),  # D18
        (_sys_db.SystemDatabase, "check_operation_execution", "check_operation_execution"),  # D3
        (_core.ActiveWorkflowById, "count_for_queue", "count_for_queue"),  # D17
        (_core.ActiveWorkflowById, "_remove", "_remove"),  # D17
        (_context, "_dbos_context_var", "_dbos_context_var"),  # D5
        (_context, "get_local_dbos_context", "get_local_dbos_context"),  # D10
    ],
)
def test_a_missing_internal_fails_at_start_naming_the_dbos_version_and_the_piece(
    fresh_check: None, monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, named: str
) -> None:
    monkeypatch.delattr(owner, name)
    with pytest.raises(_dbos.DBOSShapeError) as raised:
        _dbos.check_dbos()
    message = str(raised.value)
    assert f"dbos {_dbos.dbos_version()}" in message
    assert named in message
    assert "dbos>=3.4,<3.5" in message


def test_a_changed_signature_fails_at_start(
    fresh_check: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def recover(cls: Any, ids: list[str]) -> list[Any]:  # the executor ids renamed
        return []

    monkeypatch.setattr(DBOS, "_recover_pending_workflows", classmethod(recover))
    with pytest.raises(_dbos.DBOSShapeError, match="takes no executor_ids"):
        _dbos.check_dbos()


def test_a_client_whose_message_table_lost_a_column_is_refused() -> None:
    columns = {"destination_uuid", "topic", "created_at_epoch_ms", "message", "serialization"}
    tables = SimpleNamespace(
        workflow_status=SimpleNamespace(c={"workflow_uuid", "attributes"}),
        operation_outputs=SimpleNamespace(c={"workflow_uuid"}),
        notifications=SimpleNamespace(c=columns),  # no "consumed"
    )
    client = SimpleNamespace(_sys_db=SimpleNamespace(engine=object(), tables=tables))
    with pytest.raises(_dbos.DBOSShapeError, match="notifications has no column consumed"):
        _dbos.check_client(client)


# -- D3: the read a fresh execution skips ----------------------------------------------------


def test_the_skipped_read_only_reads_a_steps_record_and_the_runs_cancellation() -> None:
    """Skipping the read in a fresh execution is safe only while it has no other duty: no write,
    no owner check, no timeout; its only refusals are "cancelled" and "another step's record".
    A DBOS that gives it one more makes this test fail (then the skip must go or change)."""
    outer = _tree(_sys_db.SystemDatabase.check_operation_execution)
    assert _called(outer) == {"db_retry", "_own_key", "begin", "_check_operation_execution_txn"}
    inner = _tree(_sys_db.SystemDatabase._check_operation_execution_txn)
    calls = _called(inner)
    assert not calls & {"insert", "update", "delete", "values", "with_for_update"}, calls
    assert calls <= {
        "select",
        "where",
        "_wf",
        "_key_column",
        "execute",
        "all",
        "len",
        "DBOSWorkflowCancelledError",
        "DBOSUnexpectedStepError",
    }, calls
    assert _raised(inner) == {"DBOSWorkflowCancelledError", "DBOSUnexpectedStepError"}
    source = inspect.getsource(_sys_db.SystemDatabase._check_operation_execution_txn)
    assert "WorkflowStatusString.CANCELLED.value" in source  # the cancellation it reports


def test_the_read_is_reached_through_the_system_databases_own_attribute() -> None:
    """The skip replaces the method on the system-database object: DBOS's step path must call
    it as ``<sys_db>.check_operation_execution``, not through a name bound elsewhere."""
    source = inspect.getsource(_core)
    assert "_sys_db.check_operation_execution" in source


# -- D17: the queue thread and its stop event -------------------------------------------------


def test_the_queue_thread_is_named_after_its_queue_and_sleeps_on_a_stop_event() -> None:
    assert _dbos.queue_thread_name("agentensemble-runs") == "queue-worker-agentensemble-runs"
    source = inspect.getsource(_queue)
    assert 'name=f"queue-worker-{queue_name}"' in source
    # each queue's thread gets the queue manager's stop event and sleeps on it between polls:
    # the wait a wake ends early (_wake.py)
    assert "args=(stop_event, dbos, queue)" in source
    assert "stop_event.wait(timeout=polling_interval" in inspect.getsource(
        _queue.queue_worker_thread
    )
    # the queue manager's event is one of background_thread_stop_events (_dbos.queue_stop_events)
    launch = inspect.getsource(sys.modules["dbos._dbos"].DBOS._launch)
    assert "self.background_thread_stop_events.append(evt)" in launch
    assert "target=queue_thread, args=(evt, self)" in launch


# -- D18: recovering a dead worker's runs -----------------------------------------------------


def test_recovery_takes_the_executor_ids_and_recovers_only_theirs() -> None:
    assert "executor_ids" in inspect.signature(DBOS._recover_pending_workflows).parameters
    source = inspect.getsource(_recovery.recover_pending_workflows)
    assert "get_pending_workflows(" in source and "executor_id" in source


# -- D16 and D17 on a live runtime ------------------------------------------------------------

LIVE_APP = """
import json, sys, threading, time
from dbos import DBOSClient
from agentensemble import Agent, Ensemble, Task
from agentensemble.durable import DurableRuntime, _dbos
from agentensemble.durable._forks import HOLD_QUEUE
from agentensemble.durable._runtime import QUEUE_NAME, WORKFLOW_NAME
from agentensemble.durable._wake import _WakeableEvent
from agentensemble.testing import FunctionChatModel

db = sys.argv[1]

def build():
    agent = Agent(role="Echo", goal="Echo", llm=FunctionChatModel(lambda m, t: "done"))
    return Ensemble(tasks=[Task(description="Say done", agent=agent)])

runtime = DurableRuntime(db, poll_interval=0.05)
runtime.register("echo", build)
runtime.launch()
events = _dbos.queue_stop_events()
client = DBOSClient(system_database_url=db)
held = client.enqueue({"queue_name": HOLD_QUEUE, "workflow_name": WORKFLOW_NAME,
                       "workflow_id": "held"}, "echo", {})
taken = client.enqueue({"queue_name": QUEUE_NAME, "workflow_name": WORKFLOW_NAME,
                        "workflow_id": "taken"}, "echo", {})
taken.get_result()  # polled after "held" was queued: the worker has looked at its queues
threads = {t.name for t in threading.enumerate()}  # the queue's thread took "taken"
held_status = client.retrieve_workflow("held").get_status().status
client.resume_workflow("held", queue_name=QUEUE_NAME)
client.retrieve_workflow("held").get_result()
print(json.dumps({
    "queue_thread": _dbos.queue_thread_name(QUEUE_NAME) in threads,
    "wakeable": any(isinstance(e, _WakeableEvent) for e in events),
    "held_while_on_hold_queue": held_status,
    "after_resume": client.retrieve_workflow("held").get_status().status,
}))
client.destroy()
runtime.shutdown()
"""


def test_a_run_on_the_hold_queue_waits_until_resumed_onto_a_real_queue(tmp_path: Path) -> None:
    """D16 (the fork's hold queue) and D17 (the queue thread found by name, its stop event made
    wakeable) on a launched runtime."""
    done = subprocess.run(
        [sys.executable, "-c", LIVE_APP, f"sqlite:///{tmp_path}/runs.sqlite"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {
        "queue_thread": True,
        "wakeable": True,
        "held_while_on_hold_queue": "ENQUEUED",
        "after_resume": "SUCCESS",
    }
