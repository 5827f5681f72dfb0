"""The one door into what DBOS does not promise: every internal of DBOS the package relies on.

No other module of the package imports ``dbos._...``, reads ``_sys_db``, calls
``_get_dbos_instance`` or ``get_local_dbos_context``, touches a ``DBOSContext``'s fields or names a
DBOS table; each such reach is a small named function here (in brackets: its row in issue 37's
inventory of internals, D1-D19). The rest of ``durable/`` calls these.

An upgrade of DBOS that renames or reshapes one of them must fail at start, loudly, not after a
crash in production (taking over a dead worker's runs is the first time D18 runs): so
``check_dbos()`` (called by ``DurableRuntime.launch()`` and ``DurableClient``) asserts that each
internal exists with the shape used here, and ``check_launched()`` / ``check_client()`` assert
the same of a live instance; either raises ``DBOSShapeError`` naming the DBOS version and what
is missing. ``tests/durable/test_dbos_contract.py`` pins what each internal is relied on to do.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from agentensemble.errors import ConfigurationError

# the columns of DBOS's system tables read here, by table
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "workflow_status": ("workflow_uuid", "attributes"),
    "operation_outputs": ("workflow_uuid",),
    "notifications": (
        "destination_uuid",
        "topic",
        "consumed",
        "created_at_epoch_ms",
        "message",
        "serialization",
    ),
}
# what a DBOSContext copy is given to number steps in a range of its own (D4)
CONTEXT_FIELDS = ("workflow_id", "function_id", "curr_step_function_id", "context_spans")
_START_STATEMENT = "_agentensemble_run_start"
_FRESH_SKIP = "_agentensemble_fresh_check"
_WAKES = "_agentensemble_wakes"


class DBOSShapeError(ConfigurationError):
    """The installed DBOS lacks an internal the durable runtime relies on (another version)."""


def dbos_version() -> str:
    """The installed DBOS's version, as its package metadata says."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dbos")
    except PackageNotFoundError:  # pragma: no cover - an unusual install
        return "unknown"


def _fail(missing: list[str]) -> None:
    if missing:
        raise DBOSShapeError(
            f"agentensemble.durable relies on DBOS internals that dbos {dbos_version()} does not "
            f"have as expected: {'; '.join(missing)}. Install the DBOS version agentensemble-py "
            "allows (pyproject.toml: dbos>=3.4,<3.5)"
        )


def _parameters(owner: Any, name: str, wanted: tuple[str, ...], missing: list[str]) -> None:
    found = getattr(owner, name, None)
    where = f"{getattr(owner, '__qualname__', owner)}.{name}"
    if not callable(found):
        missing.append(f"{where} is gone")
        return
    try:
        parameters = inspect.signature(found).parameters
    except (TypeError, ValueError):  # pragma: no cover - a C callable
        missing.append(f"{where} has no readable signature")
        return
    absent = [p for p in wanted if p not in parameters]
    if absent:
        missing.append(f"{where} takes no {', '.join(absent)}")


def _columns(tables: Any, missing: list[str]) -> None:
    for table, columns in TABLE_COLUMNS.items():
        found = getattr(tables, table, None)
        if found is None:
            missing.append(f"system table {table} is gone")
            continue
        absent = [c for c in columns if c not in found.c]
        if absent:
            missing.append(f"system table {table} has no column {', '.join(absent)}")


@functools.cache
def check_dbos() -> None:
    """Assert that every internal of DBOS used here exists with the expected shape (once per
    process); ``DBOSShapeError`` naming the DBOS version and each missing piece if not."""
    missing: list[str] = []
    try:
        from dbos import _context, _core, _dbos, _serialization, _sys_db
        from dbos._schemas.system_database import SystemSchema
    except ImportError as error:
        _fail([f"module {error.name or error} is gone"])
        return
    for module, name in (
        (_dbos, "_get_dbos_instance"),
        (_context, "get_local_dbos_context"),
        (_serialization, "deserialize_value"),
    ):
        if not callable(getattr(module, name, None)):
            missing.append(f"{module.__name__}.{name} is gone")
    if not isinstance(getattr(_context, "_dbos_context_var", None), ContextVar):
        missing.append("dbos._context._dbos_context_var is no context variable")
    context_class = getattr(_context, "DBOSContext", None)
    if context_class is None:
        missing.append("dbos._context.DBOSContext is gone")
    else:
        blank = context_class()
        absent = [f for f in CONTEXT_FIELDS if not hasattr(blank, f)]
        if absent or not callable(getattr(blank, "is_workflow", None)):
            missing.append(f"DBOSContext has no {', '.join(absent) or 'is_workflow()'}")
    _parameters(
        _sys_db.SystemDatabase,
        "check_operation_execution",
        ("workflow_id", "function_id", "function_name", "owner_key"),
        missing,
    )
    _parameters(_dbos.DBOS, "_recover_pending_workflows", ("executor_ids",), missing)
    active = getattr(_core, "ActiveWorkflowById", None)
    if active is None:
        missing.append("dbos._core.ActiveWorkflowById is gone")
    else:
        _parameters(active, "_remove", ("key", "bucket"), missing)
        _parameters(active, "count_for_queue", ("queue_name",), missing)
    _columns(SystemSchema, missing)
    _fail(missing)


def check_launched() -> None:
    """Assert the launched DBOS instance of this process has the attributes used here."""
    check_dbos()
    dbos = instance()
    missing: list[str] = []
    _system_database_shape(_system_database(dbos), missing)
    events = getattr(dbos, "background_thread_stop_events", None)
    if not isinstance(events, list) or not all(isinstance(e, threading.Event) for e in events):
        missing.append("DBOS.background_thread_stop_events is no list of threading.Event")
    active = getattr(dbos, "_active_workflows_set", None)
    if active is None or not callable(getattr(active, "_remove", None)):
        missing.append("DBOS._active_workflows_set (with _remove) is gone")
    _fail(missing)


def check_client(client: Any) -> None:
    """Assert a ``DBOSClient`` has the system database used here (its engine, its tables)."""
    check_dbos()
    missing: list[str] = []
    _system_database_shape(getattr(client, "_sys_db", None), missing, launched=False)
    _fail(missing)


def _system_database_shape(sys_db: Any, missing: list[str], *, launched: bool = True) -> None:
    if sys_db is None:
        missing.append("the system database (_sys_db) is gone")
        return
    names = ("engine", "tables", "serializer", "app_name") if launched else ("engine", "tables")
    missing.extend(f"the system database has no {n}" for n in names if not hasattr(sys_db, n))
    if hasattr(sys_db, "tables"):
        _columns(sys_db.tables, missing)


# -- the instance (D14) --------------------------------------------------------------------------


def instance() -> Any:
    """This process's DBOS instance (the one ``DBOS(config=...)`` made)."""
    from dbos._dbos import _get_dbos_instance

    return _get_dbos_instance()


def _system_database(dbos: Any = None) -> Any:
    return (instance() if dbos is None else dbos)._sys_db


def system_engine() -> Any:
    """The SQLAlchemy engine of this process's launched DBOS system database."""
    return _system_database().engine


def system_app_name() -> str:
    """The application name this process's DBOS runs under."""
    return str(_system_database().app_name)


def client_engine(client: Any) -> Any:
    """The SQLAlchemy engine of a ``DBOSClient``'s system database."""
    return client._sys_db.engine


def has_system_tables(client: Any) -> bool:
    """Whether DBOS's tables exist in a ``DBOSClient``'s database (a worker or a client made
    them); raises what the database raised, a missing schema included."""
    import sqlalchemy

    engine: Any = client_engine(client)
    schema = None if engine.dialect.name == "sqlite" else "dbos"
    return bool(sqlalchemy.inspect(engine).has_table("workflow_status", schema=schema))


# -- a fresh execution skips the read before its steps (D3, D7) --------------------------------


def skip_fresh_reads(skip: Callable[[str], bool]) -> None:
    """Make DBOS's read of a step's checkpoint come back "nothing recorded, not cancelled" for
    workflow ``id`` whenever ``skip(id)`` (``_fresh.py`` decides: a fresh execution's own
    steps); DBOS's other reads are untouched. Idempotent, per launched instance."""
    sys_db = _system_database()
    if getattr(sys_db, _FRESH_SKIP, False):
        return
    original = sys_db.check_operation_execution

    def check_operation_execution(
        workflow_id: str, function_id: int, function_name: str, **options: Any
    ) -> Any:
        if skip(workflow_id):
            return None
        return original(workflow_id, function_id, function_name, **options)

    sys_db.check_operation_execution = check_operation_execution
    setattr(sys_db, _FRESH_SKIP, True)


def read_run_start(workflow_id: str) -> tuple[dict[str, Any] | None, bool]:
    """The run's attributes and whether no step of it is checkpointed yet, in one statement
    (blocking: call it in a thread)."""
    import sqlalchemy as sa

    sys_db = _system_database()
    statement = _start_statement(sys_db)
    for attempt in range(3):
        try:
            with sys_db.engine.connect() as connection:
                row = connection.execute(statement, {"run_id": workflow_id}).first()
            if row is None:
                return None, True
            attributes, recorded = row
            return (attributes if isinstance(attributes, dict) else None), not recorded
        except sa.exc.DBAPIError as error:
            # a pooled connection the server dropped (pools are not pinged): once more, anew
            if not error.connection_invalidated or attempt == 2:
                raise
    raise AssertionError("unreachable")


def _start_statement(sys_db: Any) -> Any:
    """Built once per database (SQLAlchemy then reuses its compiled form)."""
    built = getattr(sys_db, _START_STATEMENT, None)
    if built is None:
        import sqlalchemy as sa

        status, outputs = sys_db.tables.workflow_status, sys_db.tables.operation_outputs
        run_id = sa.bindparam("run_id", type_=status.c.workflow_uuid.type)
        recorded = sa.exists().where(outputs.c.workflow_uuid == run_id)
        built = sa.select(status.c.attributes, recorded).where(status.c.workflow_uuid == run_id)
        setattr(sys_db, _START_STATEMENT, built)
    return built


# -- step numbers per task and per branch (D4, D5, D10) ---------------------------------------


def workflow_context() -> Any:
    """The current workflow's own DBOS context (its step counter), or None outside a workflow."""
    from dbos._context import get_local_dbos_context

    context = get_local_dbos_context()
    return context if context is not None and context.is_workflow() else None


def counter_from(context: Any, last: int) -> Any:
    """A copy of workflow ``context`` (same run, same owner) whose next step is ``last + 1``:
    DBOS adds 1 to ``function_id`` before numbering a step."""
    import copy

    found = copy.copy(context)
    found.function_id = last
    found.curr_step_function_id = -1
    found.context_spans = list(context.context_spans)
    return found


def counter_last(context: Any) -> int:
    """The last step number ``context`` handed out."""
    return int(context.function_id)


def move_counter(context: Any, last: int) -> None:
    """Make ``context``'s next step ``last + 1`` (numbers before it are reserved elsewhere)."""
    context.function_id = last


def counter_run_id(context: Any) -> str:
    return str(context.workflow_id)


@contextlib.contextmanager
def counting_with(context: Any) -> Iterator[None]:
    """Make the DBOS operations of the block number their steps with ``context``."""
    from dbos._context import _dbos_context_var

    token = _dbos_context_var.set(context)
    try:
        yield
    finally:
        _dbos_context_var.reset(token)


def current_function_id() -> int:
    """The number of the current workflow's last operation (a review's id, outside a step)."""
    from dbos._context import get_local_dbos_context

    context = get_local_dbos_context()
    if context is None:
        raise ConfigurationError("current_function_id() belongs inside a DBOS workflow")
    return int(context.function_id)


# -- messages a step may read but DBOS will not let it receive (D11, D12) ---------------------


def first_message(run_id: str, topic: str) -> Any:
    """The first message sent to ``run_id`` on ``topic`` (consumed or not), or None; blocking.

    DBOS lets a step publish but not receive: this reads its message table directly."""
    import sqlalchemy
    from dbos._serialization import deserialize_value

    sys_db: Any = _system_database()
    table = sys_db.tables.notifications
    query = (
        sqlalchemy.select(table.c.message, table.c.serialization)
        .where(table.c.destination_uuid == run_id)
        .where(table.c.topic == topic)
        .order_by(table.c.created_at_epoch_ms)
        .limit(1)
    )
    with sys_db.engine.connect() as connection:
        row = connection.execute(query).first()
    return None if row is None else deserialize_value(row[0], row[1], sys_db.serializer)


def oldest_unread_message_ms(client: Any, run_id: str, topic: str) -> int | None:
    """When the oldest message to ``run_id`` on ``topic`` that no execution has received yet was
    sent (ms since the epoch), through a ``DBOSClient``; None if there is none."""
    import sqlalchemy

    sys_db: Any = client._sys_db
    table = sys_db.tables.notifications
    query = (
        sqlalchemy.select(sqlalchemy.func.min(table.c.created_at_epoch_ms))
        .where(table.c.destination_uuid == run_id)
        .where(table.c.topic == topic)
        .where(table.c.consumed == sqlalchemy.false())
    )
    with sys_db.engine.connect() as connection:
        sent = connection.execute(query).scalar()
    return None if sent is None else int(sent)


# -- the queue thread's wakes (D17) -----------------------------------------------------------


def queue_thread_name(queue_name: str) -> str:
    """The name DBOS gives the thread polling ``queue_name`` (dbos/_queue.py)."""
    return f"queue-worker-{queue_name}"


def queue_stop_events() -> list[threading.Event]:
    """The events DBOS's background threads (queue pollers among them) wait on between polls
    and stop on."""
    return list(getattr(instance(), "background_thread_stop_events", []))


def running_on_queue(queue_name: str) -> int:
    """How many runs of ``queue_name`` this process is running now."""
    return int(instance()._active_workflows_set.count_for_queue(queue_name))


def on_run_finished(queue_name: str, callback: Callable[[], None]) -> None:
    """Call ``callback`` each time a run of ``queue_name`` leaves this process's running set
    (a worker slot is free). Once per launched instance."""
    active = instance()._active_workflows_set
    if getattr(active, _WAKES, False):
        return
    remove = active._remove

    def _remove(key: str, bucket: Any) -> None:
        remove(key, bucket)
        if bucket is not None and bucket[0] == queue_name:
            callback()

    active._remove = _remove
    setattr(active, _WAKES, True)


# -- taking over a dead worker, stopping to take work (D18, D19) ------------------------------


def recover_pending(worker_id: str) -> list[str]:
    """Hand ``worker_id``'s PENDING runs back to the queue; their ids. DBOS re-enqueues a run
    only while its row still names ``worker_id``, so two recoverers cannot both take it."""
    from dbos import DBOS

    return [handle.workflow_id for handle in DBOS._recover_pending_workflows([worker_id])]


def stop_background_threads() -> None:
    """Stop this process's DBOS from taking queued runs (and scheduled work): the events its
    background threads stop on, the same ones ``DBOS.destroy`` sets first."""
    for event in queue_stop_events():
        event.set()


__all__ = [
    "CONTEXT_FIELDS",
    "TABLE_COLUMNS",
    "DBOSShapeError",
    "check_client",
    "check_dbos",
    "check_launched",
    "client_engine",
    "counter_from",
    "counter_last",
    "counter_run_id",
    "counting_with",
    "current_function_id",
    "dbos_version",
    "first_message",
    "has_system_tables",
    "instance",
    "move_counter",
    "oldest_unread_message_ms",
    "on_run_finished",
    "queue_stop_events",
    "queue_thread_name",
    "read_run_start",
    "recover_pending",
    "running_on_queue",
    "skip_fresh_reads",
    "stop_background_threads",
    "system_app_name",
    "system_engine",
    "workflow_context",
]
