"""The webhook handler's small parts: its deadline, the answers it reads, its reasons."""

from __future__ import annotations

import math
import time
import urllib.parse
import zlib
from dataclasses import dataclass
from datetime import timedelta

import httpx

from agentensemble_review._format import format_duration
from agentensemble_review.models import ReviewRequest


class _NoDecision(Exception):
    """No decision can arrive: out of time, unreachable, or failing; ``on_timeout`` applies.

    ``closed``: the webhook itself said the review is over (410), so there is nothing to
    withdraw."""

    def __init__(self, reason: str, *, closed: bool = False) -> None:
        super().__init__(reason)
        self.closed = closed


@dataclass(frozen=True)
class _Deadline:
    """When the handler stops waiting: ``at`` on the monotonic clock (None: never)."""

    limit: float | None
    at: float | None

    @classmethod
    def starting_now(cls, limit: float | None) -> _Deadline:
        return cls(limit, None if limit is None else time.monotonic() + limit)

    def remaining(self) -> float | None:
        return None if self.at is None else self.at - time.monotonic()

    def expired(self) -> bool:
        remaining = self.remaining()
        return remaining is not None and remaining <= 0

    def reason(self) -> str:
        return _timeout_reason(self.limit)


def _timeout_reason(limit: float | None) -> str:
    shown = "its deadline" if limit is None else format_duration(limit)
    return f"Review timed out after {shown}: no decision from the review webhook"


@dataclass(frozen=True)
class _Answer:
    status: int
    reason: str
    headers: httpx.Headers
    content: bytes


def _seconds(value: float | timedelta | None) -> float | None:
    if value is None:
        return None
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError("timeout must be zero (no limit of its own) or a finite positive number")
    return seconds or None


def _finite_positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite positive number of seconds, got {value!r}")
    return float(value)


ACCEPTED_ENCODINGS = "gzip, deflate"
"""What the handler asks a webhook for (never br or zstd: those it would have to decode
unbounded)."""


class BoundedBody:
    """An answer's body as it streams in, decoded (gzip, deflate or none) to at most
    ``limit`` bytes: decompressing only what still fits, so a gzip bomb costs at most
    ``limit`` bytes (httpx inflates each 64 KiB read whole: ~64 MB of a bomb at once).
    ``feed`` returns False once the body is over the limit; a broken stream or an encoding
    it was not offered raises ``httpx.DecodingError``."""

    def __init__(self, encoding: str, limit: int) -> None:
        self._limit = limit
        self._chunks: list[bytes] = []
        self._size = 0
        coding = encoding.strip().lower()
        if coding in ("", "identity"):
            self._inflater = None
        elif coding in ("gzip", "x-gzip"):
            self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif coding == "deflate":
            self._inflater = zlib.decompressobj()
        else:
            raise httpx.DecodingError(f"an encoding that was not asked for ({coding[:40]!r})")

    def feed(self, raw: bytes) -> bool:
        if self._inflater is None:
            data = raw
        else:
            try:  # at most one byte past the room left: enough to know it is over
                data = self._inflater.decompress(raw, self._limit - self._size + 1)
            except zlib.error as error:
                raise httpx.DecodingError(
                    f"the answer is not valid compressed data ({error})"
                ) from None
        self._size += len(data)
        if self._size > self._limit:
            return False
        self._chunks.append(data)
        return True

    @property
    def content(self) -> bytes:
        return b"".join(self._chunks)


def withdraw_url(url: httpx.URL, review_id: str) -> httpx.URL:
    """``<webhook>/<id>/withdraw``, beside the webhook's own path (its query kept)."""
    path = url.raw_path.decode("ascii").split("?", 1)[0].rstrip("/")
    query = url.query.decode("ascii")
    path = f"{path}/{urllib.parse.quote(review_id, safe='')}/withdraw"
    return url.copy_with(raw_path=(path + (f"?{query}" if query else "")).encode("ascii"))


def _same_origin(a: httpx.URL, b: httpx.URL) -> bool:
    return (a.scheme, a.host, a.port) == (b.scheme, b.host, b.port)


def _snippet(content: bytes, limit: int = 200) -> str:
    text = content[: limit * 4].decode("utf-8", errors="replace").strip()
    return text if len(text) <= limit else text[:limit] + "..."


def _expired_reason(request: ReviewRequest) -> str:
    """Why no decision will come for a review the webhook calls expired (410 Gone)."""
    return (
        f"Review {request.id} expired at the review webhook (HTTP 410 Gone): its timeout of "
        f"{request.describe_timeout()} passed with no decision"
    )


__all__ = [
    "ACCEPTED_ENCODINGS",
    "BoundedBody",
    "_Answer",
    "_Deadline",
    "_NoDecision",
    "_expired_reason",
    "_finite_positive",
    "_same_origin",
    "_seconds",
    "_snippet",
    "_timeout_reason",
    "withdraw_url",
]
