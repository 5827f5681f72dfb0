"""litellm's background logging worker, kept from printing "Task was destroyed but it is pending".

After every async completion litellm queues its success callbacks on one process-wide
``LoggingWorker``, whose worker task lives on the event loop of the call. When a call comes from
another loop (a sync ``run()`` on our shared loop, then ``asyncio.run(ensemble.arun())``, an eval
judge, a served ensemble), the worker moves its queue to the new loop and drops its reference to
the old worker task, still pending on the old loop. Nothing else holds that task, so the garbage
collector destroys it, and asyncio prints ``Task was destroyed but it is pending!`` with the
worker's coroutine on the user's stderr (litellm 1.106; BerriAI/litellm#36548).

The dropped task has nothing left to do: its queue was handed over. So we keep a reference to it
while its loop may still run it (never destroyed pending, never a call on a closed loop from the
collector), forget it once it is done, and at exit mark what is still pending as expected, so
that the interpreter's teardown does not report it either. Nothing is cancelled: cancelling the
old worker would make it clear litellm's *new* queue from the wrong loop.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from typing import Any

_stranded: list[asyncio.Task[Any]] = []
_lock = threading.Lock()  # loops in several threads may strand tasks at once


def quiet_logging_worker() -> None:
    """Wrap ``GLOBAL_LOGGING_WORKER._ensure_queue`` to keep the tasks it strands (once)."""
    try:
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER
    except ImportError:  # another litellm layout: nothing of this to tame
        return
    worker: Any = GLOBAL_LOGGING_WORKER
    ensure = getattr(worker, "_ensure_queue", None)
    if ensure is None or getattr(ensure, "_agentensemble_quiet", False):
        return

    def _ensure_queue() -> None:
        before = getattr(worker, "_worker_task", None)
        ensure()
        if isinstance(before, asyncio.Task) and getattr(worker, "_worker_task", None) is not before:
            _keep(before)

    _ensure_queue._agentensemble_quiet = True  # type: ignore[attr-defined]
    worker._ensure_queue = _ensure_queue
    atexit.register(_expected_at_exit, worker)  # runs before litellm's own flush (LIFO)


def _keep(task: asyncio.Task[Any]) -> None:
    with _lock:
        _stranded[:] = [kept for kept in _stranded if not kept.done()]
        if not task.done():
            _stranded.append(task)


def _expected_at_exit(worker: Any) -> None:
    """The worker tasks still waiting at exit are expected to: say so to asyncio."""
    current = getattr(worker, "_worker_task", None)
    with _lock:
        stranded = list(_stranded)
    for task in [*stranded, *([current] if isinstance(current, asyncio.Task) else [])]:
        if not task.done():
            task._log_destroy_pending = False  # type: ignore[attr-defined]  # asyncio's own switch


__all__ = ["quiet_logging_worker"]
