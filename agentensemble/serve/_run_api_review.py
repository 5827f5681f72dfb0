"""``review: api``: a run started through the run API (``run_api``) is reviewed by its caller.

The handler reads the served run from a context variable the run API sets for each run; the
review then waits in that run until the caller decides it (``POST /reviews/{id}``) or its
timeout applies ``on_timeout``. Outside a run of the run API it fails closed (``ExitEarly``).
Kept apart from ``run_api_serving.py``: a crew file naming ``review: api`` loads without Starlette.
"""

from __future__ import annotations

import contextvars
from typing import Any, Protocol


class ServedRun(Protocol):
    """What the handler needs of the run it serves: to ask its caller."""

    async def ask(self, request: Any) -> Any: ...


current_run: contextvars.ContextVar[ServedRun | None] = contextvars.ContextVar(
    "agentensemble_run_api_run", default=None
)


class RunAPIReviewHandler:
    """Reviews decided through the run API by the caller that started the run (``review: api``).

    For durable runs use ``DurableReviewHandler``: the run API lists and decides its reviews
    the same way, and they survive a restart."""

    async def areview(self, request: Any) -> Any:
        from agentensemble_review import ExitEarly

        run = current_run.get()
        if run is None:
            return ExitEarly(
                "review: api decides the reviews of runs started through the run API; this run "
                "was not, so the gated step was refused"
            )
        return await run.ask(request)

    def __repr__(self) -> str:
        return "RunAPIReviewHandler()"


__all__ = ["RunAPIReviewHandler", "ServedRun", "current_run"]
