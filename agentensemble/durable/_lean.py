"""Work DBOS does on every step that has no effect on what it writes, left out.

Measured on SQLite (benchmarks/RESULTS.md, "Durable runs"): a durable model turn is two steps,
and each step paid for two things that change nothing:

- **Two thread hops with nothing to do.** DBOS runs each stage of an async step through
  ``asyncio.to_thread``: the read of the step's checkpoint, a stage that only hands back the
  next stage, and the checkpoint's write. In a fresh execution the read is skipped (``_fresh``),
  so two of the three hops carry no work, yet each costs a thread wake-up and a future, about
  0.14 ms of CPU on this machine. Those two now run in place on the event loop; the write,
  which blocks on the database, still runs in a thread. Which stage a call is, is told by the
  name DBOS gives the function: a stage not recognised (another DBOS version, any other
  caller) goes to a thread as before, so an upgrade can cost speed, never correctness
  (tests/durable/test_lean.py notices it).
- **The database clock, rebuilt per statement.** Every checkpoint stamps its row with an SQL
  expression for "now in milliseconds" that DBOS builds anew each time (a cast of a function
  times 1000: about 0.16 ms of CPU). The expression is the same every time (the database
  evaluates it as the statement runs, not when it is built), so it is built once per database.

Nothing here changes a statement, a transaction or the order of writes: a completed step is
still checkpointed, in its own transaction checking the run's owner, before the run goes on.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Callable
from typing import Any

from agentensemble.durable._fresh import read_skipped

_INSTALLED = "_agentensemble_lean"
# DBOS's names for the two stages that carry no work (dbos/_outcome.py, dbos/_core.py)
# ``lambda: next`` inside ``Pending.then``: hands back the next stage
_NEXT_STAGE = "Pending.then.<locals>.<lambda>.<locals>.<lambda>"
_CHECK = "invoke_step.<locals>.check_existing_result"  # the read, skipped when fresh


def runs_in_place(func: Callable[..., Any]) -> bool:
    """Whether ``func``, handed to a thread by DBOS's step machinery, has nothing to do there."""
    name = getattr(func, "__qualname__", "")
    if name == _NEXT_STAGE:
        return True
    return name == _CHECK and read_skipped()


async def _to_thread(func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    if not args and not kwargs and runs_in_place(func):
        return func()
    return await asyncio.to_thread(func, *args, **kwargs)


class _Asyncio(types.ModuleType):
    """What DBOS's step machinery sees as ``asyncio``: asyncio, with ``to_thread`` ours."""

    to_thread = staticmethod(_to_thread)

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)


def install_hops() -> None:
    """Make DBOS's step stages that carry no work run in place (idempotent; per process)."""
    from dbos import _outcome

    if not isinstance(getattr(_outcome, "asyncio", None), _Asyncio):
        setattr(_outcome, "asyncio", _Asyncio("asyncio"))  # noqa: B010 (not exported)


def install_clock(sys_db: Any) -> None:
    """Build ``sys_db``'s "now in milliseconds" expression once (idempotent)."""
    if getattr(sys_db, _INSTALLED, False):
        return
    built = sys_db._now_ms_sql()  # immutable, evaluated by the database at each execution

    def now_ms_sql() -> Any:
        return built

    sys_db._now_ms_sql = now_ms_sql
    setattr(sys_db, _INSTALLED, True)


def install(sys_db: Any) -> None:
    install_hops()
    install_clock(sys_db)


__all__ = ["install", "install_clock", "install_hops", "runs_in_place"]
