"""The reviews the reference server holds: thread-safe, bounded in all and per client.

A flood of junk reviews from one client cannot starve the others: each client (remote address)
may hold at most ``per_client`` pending reviews (more gets ``None``: the server answers 429), and
when the store is full a new review evicts the oldest decided one, or else the oldest pending one
of the client holding the most, never one of a client holding fewer than the newcomer's.

A pending review whose request has a timeout (``timeout_seconds`` > 0) expires when that much
time has passed since it was first received: it can no longer be decided (``ReviewExpiredError``),
it no longer counts as pending, and posting its id again does not reopen it. The run that asked
has applied its ``on_timeout`` by then, so a late decision must never be recorded as if it
counted.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from agentensemble.redaction import redact
from agentensemble_review.models import ReviewDecision
from agentensemble_review.protocol import decision_to_json

MAX_REVIEWS = 1000
MAX_PENDING_PER_CLIENT = 100
GONE_REMEMBERED = 100_000
"""Ids of expired reviews dropped to make room, remembered so that asking again never reopens
one (a few MB at most)."""


class Refusal(Enum):
    """Why a new review was not stored."""

    CLIENT_FULL = "too many pending reviews from this client"
    STORE_FULL = "too many pending reviews"
    GONE = "this review has expired: its timeout passed with no decision; it cannot be reopened"
    DIFFERENT = (
        "a different review is already held under this id; a client asking again must send "
        "the same request"
    )


class ReviewExpiredError(ValueError):
    """A decision for a review whose timeout passed with no decision: never applied."""


def timeout_of(request: dict[str, Any]) -> float | None:
    """The request's ``timeout_seconds`` when it is a finite positive number, else None (no
    expiry: 0 means "wait forever"; anything else is not a timeout this store can honour)."""
    value = request.get("timeout_seconds")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    seconds = float(value)
    return seconds if math.isfinite(seconds) and seconds > 0 else None


@dataclass
class Record:
    id: str
    request: dict[str, Any]
    client: str = ""
    received_at: float = field(default_factory=time.monotonic)
    decision: ReviewDecision | None = None
    withdrawn: str | None = None
    """Why the run stopped waiting (its own deadline passed first): closed as if expired."""

    @property
    def timeout(self) -> float | None:
        return timeout_of(self.request)

    def expired(self, now: float) -> bool:
        """Undecided, and its timeout has passed since it was first received."""
        if self.decision is not None:
            return False
        timeout = self.timeout
        return self.withdrawn is not None or (
            timeout is not None and now >= self.received_at + timeout
        )

    def status(self, now: float) -> str:
        if self.decision is not None:
            return "decided"
        return "expired" if self.expired(now) else "pending"

    def expiry_message(self) -> str:
        if self.withdrawn is not None:
            return (
                f"review {self.id!r} was given up by the run waiting for it ({self.withdrawn}), "
                "so the run applied its on_timeout action; a decision can no longer be applied"
            )
        return (
            f"review {self.id!r} has expired: its timeout of {self.timeout:g} s passed with no "
            "decision, so the run applied its on_timeout action; a decision can no longer be "
            "applied"
        )

    def to_json(self, now: float | None = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status(time.monotonic() if now is None else now),
            # what the page and the listing show passes the redaction policy, whoever sent it
            "request": redact(self.request),
            "decision": None if self.decision is None else decision_to_json(self.decision),
        }


class Store:
    """Reviews by id, oldest first."""

    def __init__(
        self,
        capacity: int = MAX_REVIEWS,
        per_client: int = MAX_PENDING_PER_CLIENT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._records: dict[str, Record] = {}
        self._gone: OrderedDict[str, str] = OrderedDict()  # expired, then evicted: id -> why
        self._changed = threading.Condition()
        self._capacity = capacity
        self._per_client = per_client
        self.clock = clock

    def add(self, review_id: str, request: dict[str, Any], client: str = "") -> Record | Refusal:
        """The record for ``review_id`` (existing or new), or why it was refused.

        Asking again with the same id returns the record held, whatever its state; asking with
        the same id and another request is refused: a decision is only ever about what the
        reviewer saw.
        """
        with self._changed:
            if review_id in self._gone:  # expired long ago and dropped: still never reopened
                return Refusal.GONE
            existing = self._records.get(review_id)
            if existing is not None:  # a client asking again (a retry, a recovered run)
                return existing if existing.request == request else Refusal.DIFFERENT
            pending = self._pending_by_client()
            if len(pending.get(client, [])) >= self._per_client:
                return Refusal.CLIENT_FULL
            if len(self._records) >= self._capacity and not self._evict(pending, client):
                return Refusal.STORE_FULL
            record = Record(review_id, request, client, received_at=self.clock())
            self._records[review_id] = record
            self._changed.notify_all()
            return record

    def _pending_by_client(self) -> dict[str, list[Record]]:
        pending: dict[str, list[Record]] = {}
        now = self.clock()
        for record in self._records.values():
            if record.decision is None and not record.expired(now):
                pending.setdefault(record.client, []).append(record)
        return pending

    def _evict(self, pending: dict[str, list[Record]], client: str) -> bool:
        now = self.clock()
        closed = [r for r in self._records.values() if r.decision is not None or r.expired(now)]
        if closed:  # a decided or expired review is kept only for a client asking again
            victim = min(closed, key=lambda r: r.received_at)
        else:
            heaviest = max(pending.values(), key=len, default=[])
            if len(heaviest) <= len(pending.get(client, [])) + 1:
                return False  # nobody holds more than the newcomer would: no one to evict
            victim = min(heaviest, key=lambda r: r.received_at)
        del self._records[victim.id]
        if victim.expired(now):
            self._gone[victim.id] = victim.expiry_message()
            while len(self._gone) > GONE_REMEMBERED:
                self._gone.popitem(last=False)
        return True

    def gone(self, review_id: str) -> str | None:
        """Why ``review_id`` can never be decided, if it expired and was dropped since."""
        with self._changed:
            return self._gone.get(review_id)

    def get(self, review_id: str) -> Record | None:
        with self._changed:
            return self._records.get(review_id)

    def decide(self, review_id: str, decision: ReviewDecision) -> None:
        with self._changed:
            record = self._records.get(review_id)
            if record is None and review_id in self._gone:
                raise ReviewExpiredError(self._gone[review_id])
            if record is None:
                raise KeyError(review_id)
            if record.decision is not None:
                raise ValueError(f"review {review_id} is already decided")
            if record.expired(self.clock()):
                raise ReviewExpiredError(record.expiry_message())
            record.decision = decision
            self._changed.notify_all()

    def withdraw(self, review_id: str, reason: str) -> Record:
        """Close ``review_id`` because the run stopped waiting for it: no decision may be
        recorded for it from now on. KeyError if unknown; a decided review keeps its decision."""
        with self._changed:
            record = self._records.get(review_id)
            if record is None:
                raise KeyError(review_id)
            if record.decision is None and record.withdrawn is None:
                record.withdrawn = reason[:500] or "no reason given"
                self._changed.notify_all()
            return record

    def all(self) -> list[Record]:
        with self._changed:
            return sorted(self._records.values(), key=lambda r: r.received_at)

    def wait_for_pending(self, timeout: float) -> Record | None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:  # bounded by the deadline
                now = self.clock()
                pending = [
                    r for r in self._records.values() if r.decision is None and not r.expired(now)
                ]
                if pending:
                    return min(pending, key=lambda r: r.received_at)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._changed.wait(remaining)


__all__ = [
    "MAX_PENDING_PER_CLIENT",
    "MAX_REVIEWS",
    "Record",
    "Refusal",
    "ReviewExpiredError",
    "Store",
    "timeout_of",
]
