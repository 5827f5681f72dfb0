"""The reviews the reference server holds: thread-safe, bounded in all and per client.

A flood of junk reviews from one client cannot starve the others: each client (remote address)
may hold at most ``per_client`` pending reviews (more gets ``None``: the server answers 429), and
when the store is full a new review evicts the oldest decided one, or else the oldest pending one
of the client holding the most, never one of a client holding fewer than the newcomer's.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from agentensemble_review.models import ReviewDecision
from agentensemble_review.protocol import decision_to_json

MAX_REVIEWS = 1000
MAX_PENDING_PER_CLIENT = 100


class Refusal(Enum):
    """Why a new review was not stored."""

    CLIENT_FULL = "too many pending reviews from this client"
    STORE_FULL = "too many pending reviews"


@dataclass
class Record:
    id: str
    request: dict[str, Any]
    client: str = ""
    received_at: float = field(default_factory=time.monotonic)
    decision: ReviewDecision | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": "pending" if self.decision is None else "decided",
            "request": self.request,
            "decision": None if self.decision is None else decision_to_json(self.decision),
        }


class Store:
    """Reviews by id, oldest first."""

    def __init__(
        self, capacity: int = MAX_REVIEWS, per_client: int = MAX_PENDING_PER_CLIENT
    ) -> None:
        self._records: dict[str, Record] = {}
        self._changed = threading.Condition()
        self._capacity = capacity
        self._per_client = per_client

    def add(self, review_id: str, request: dict[str, Any], client: str = "") -> Record | Refusal:
        """The record for ``review_id`` (existing or new), or why it was refused."""
        with self._changed:
            existing = self._records.get(review_id)
            if existing is not None:
                return existing
            pending = self._pending_by_client()
            if len(pending.get(client, [])) >= self._per_client:
                return Refusal.CLIENT_FULL
            if len(self._records) >= self._capacity and not self._evict(pending, client):
                return Refusal.STORE_FULL
            record = self._records[review_id] = Record(review_id, request, client)
            self._changed.notify_all()
            return record

    def _pending_by_client(self) -> dict[str, list[Record]]:
        pending: dict[str, list[Record]] = {}
        for record in self._records.values():
            if record.decision is None:
                pending.setdefault(record.client, []).append(record)
        return pending

    def _evict(self, pending: dict[str, list[Record]], client: str) -> bool:
        decided = [r for r in self._records.values() if r.decision is not None]
        if decided:
            victim = min(decided, key=lambda r: r.received_at)
        else:
            heaviest = max(pending.values(), key=len, default=[])
            if len(heaviest) <= len(pending.get(client, [])) + 1:
                return False  # nobody holds more than the newcomer would: no one to evict
            victim = min(heaviest, key=lambda r: r.received_at)
        del self._records[victim.id]
        return True

    def get(self, review_id: str) -> Record | None:
        with self._changed:
            return self._records.get(review_id)

    def decide(self, review_id: str, decision: ReviewDecision) -> None:
        with self._changed:
            record = self._records.get(review_id)
            if record is None:
                raise KeyError(review_id)
            if record.decision is not None:
                raise ValueError(f"review {review_id} is already decided")
            record.decision = decision
            self._changed.notify_all()

    def all(self) -> list[Record]:
        with self._changed:
            return sorted(self._records.values(), key=lambda r: r.received_at)

    def wait_for_pending(self, timeout: float) -> Record | None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:  # bounded by the deadline
                pending = [r for r in self._records.values() if r.decision is None]
                if pending:
                    return min(pending, key=lambda r: r.received_at)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._changed.wait(remaining)


__all__ = ["MAX_PENDING_PER_CLIENT", "MAX_REVIEWS", "Record", "Refusal", "Store"]
