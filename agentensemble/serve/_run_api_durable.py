"""The run API over a ``DurableRuntime``: runs that outlive the API process.

Each run is a durable run of the runtime (its id the run API's id), streamed to the API's event
buffer while this process runs it. What must survive a restart is kept in the runtime's own
database, beside DBOS's tables: who submitted each run (so ownership holds after a restart) and
who decided each review. A run's state, output and pending reviews are read from the runtime
(``status``, ``aresult``) and a ``DurableClient`` (``pending_reviews``, ``decide``), so a review
asked before a restart is listed and decided after it. Database calls run off the event loop.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from agentensemble.serve._run_api_runs import (
    Refused,
    checked_decision,
    find_tool,
    request_view,
    wire_value,
)

OWNERS = "agentensemble_run_api_runs"
DECIDED = "agentensemble_run_api_decisions"
STATES = {
    "ENQUEUED": "queued",
    "PENDING": "running",
    "SUCCESS": "succeeded",
    "ERROR": "failed",
    "MAX_RECOVERY_ATTEMPTS_EXCEEDED": "failed",
    "CANCELLED": "cancelled",
}


class DurableRuns:
    """Owners and decisions of durable runs, in the runtime's database; reviews via a client."""

    def __init__(self, runtime: Any) -> None:
        import sqlalchemy as sa

        from agentensemble.durable import DurableClient

        self.runtime = runtime
        self.engine = sa.create_engine(runtime.database_url)
        meta = sa.MetaData()
        self.owners = sa.Table(
            OWNERS,
            meta,
            sa.Column("run_id", sa.String(64), primary_key=True),
            sa.Column("owner", sa.String(300), nullable=False),
            sa.Column("ensemble", sa.String(300), nullable=False),
            sa.Column("created_at", sa.Float, nullable=False),
        )
        self.decided = sa.Table(
            DECIDED,
            meta,
            sa.Column("review_id", sa.String(300), primary_key=True),
            sa.Column("run_id", sa.String(64), nullable=False, index=True),
            sa.Column("record", sa.Text, nullable=False),
        )
        meta.create_all(self.engine)
        self.client = DurableClient(runtime.database_url, app_name=runtime.app_name)

    def close(self) -> None:
        self.client.close()
        self.engine.dispose()

    # -- owners ---------------------------------------------------------------------------

    async def remember(self, run_id: str, owner: str, ensemble: str, created_at: float) -> None:
        def write() -> None:
            with self.engine.begin() as db:
                db.execute(
                    self.owners.insert().values(
                        run_id=run_id, owner=owner, ensemble=ensemble, created_at=created_at
                    )
                )

        await asyncio.to_thread(write)

    async def owned(self, run_id: str, caller: str) -> dict[str, Any] | None:
        """The run's record if ``caller`` submitted it, else None."""

        def read() -> Any:
            with self.engine.connect() as db:
                query = self.owners.select().where(self.owners.c.run_id == run_id)
                return db.execute(query).mappings().first()

        row = await asyncio.to_thread(read)
        if row is None or row["owner"] != caller:
            return None
        return dict(row)

    # -- state ----------------------------------------------------------------------------

    async def pending(self, run_id: str) -> list[dict[str, Any]]:
        found = await asyncio.to_thread(self.client.pending_reviews, run_id)
        return [review_view(run_id, review) for review in found]

    async def decisions(self, run_id: str) -> list[dict[str, Any]]:
        def read() -> list[str]:
            with self.engine.connect() as db:
                query = self.decided.select().where(self.decided.c.run_id == run_id)
                return [row["record"] for row in db.execute(query).mappings()]

        return [json.loads(text) for text in await asyncio.to_thread(read)]

    async def view(self, row: dict[str, Any], ensemble: Any) -> dict[str, Any]:
        """A run as the database knows it (after a restart, or a run this process did not
        stream)."""
        from agentensemble.serve._run_api_runs import output_view, usage_view

        run_id = row["run_id"]
        info = await asyncio.to_thread(self.runtime.status, run_id)
        state = STATES.get(info.status, "running")
        pending = await self.pending(run_id) if state == "running" else []
        view: dict[str, Any] = {
            "run_id": run_id,
            "ensemble": row["ensemble"],
            "state": "waiting_review" if pending else state,
            "created_at": row["created_at"],
            "finished_at": None,
            "outputs": None,
            "error": None,
            "exit_reason": None,
            "usage": None,
            "pending_reviews": [review["review_id"] for review in pending],
            "decisions": await self.decisions(run_id),
        }
        if state == "succeeded":
            from agentensemble.serve._shape import stopped

            output = await self.runtime.aresult(run_id)
            view["exit_reason"] = output.exit_reason.value
            view["usage"] = usage_view(output)
            why = stopped(output)
            if why is None:
                view["outputs"] = output_view(ensemble, output)
            else:
                view.update(state="failed", error=why)
        elif state == "failed":
            view["error"] = wire_value(info.error or "the run failed")
        return view

    # -- decisions ------------------------------------------------------------------------

    async def decide(
        self, run_id: str, review_id: str, body: Any, ensemble: Any, decided_by: str
    ) -> dict[str, Any]:
        from agentensemble.durable import ReviewClosedError

        pending = {r["review_id"]: r for r in await self.pending(run_id)}
        review = pending.get(review_id)
        if review is None:
            raise Refused(410, "this review is no longer pending (decided, timed out or ended)")
        tool = find_tool(ensemble, (review.get("request") or {}).get("tool_name"))
        decision = checked_decision(body, tool)
        try:
            await asyncio.to_thread(
                self.client.decide,
                run_id,
                review_id,
                decision["decision"],
                revised_output=decision.get("revised_output"),
                reason=decision.get("reason"),
                decided_by=decided_by,
            )
        except ReviewClosedError as error:
            raise Refused(409, wire_value(str(error))) from None
        record = {**decision, "review_id": review_id, "decided_by": decided_by, "at": time.time()}

        def write() -> None:
            with self.engine.begin() as db:
                db.execute(
                    self.decided.insert().values(
                        review_id=review_id, run_id=run_id, record=json.dumps(record)
                    )
                )

        await asyncio.to_thread(write)
        return record

    async def cancel(self, run_id: str) -> None:
        await asyncio.to_thread(self.runtime.cancel, run_id)


def review_view(run_id: str, review: dict[str, Any]) -> dict[str, Any]:
    """A durable pending review as the API shows every review (its request cleaned, redacted
    and bounded: ``request_view``)."""
    return {
        "review_id": review.get("review_id"),
        "run_id": run_id,
        "state": review.get("state"),
        "request": request_view(review.get("request") or {}),
        "deadline": review.get("deadline"),
        "decision": None,
    }


__all__ = ["DurableRuns", "review_view"]
