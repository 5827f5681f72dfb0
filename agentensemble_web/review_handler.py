"""``WebReviewHandler``: reviews decided by a person in the web console.

``Ensemble(..., review_handler=WebReviewHandler(url, token))``. Each review is posted to the
console, shows up at once on every open page, and waits for a browser decision (long polls,
each bounded). When the request's timeout is reached the handler tells the console the review
expired (so no late decision lands) and applies ``on_timeout``; if a decision won that race, the
decision applies. A console that cannot be reached fails closed: ``on_timeout`` applies, never
approval.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

import httpx

from agentensemble.logging import get_logger
from agentensemble.redaction import register_secret
from agentensemble.run_context import current_run_id
from agentensemble.untrusted import UntrustedInputError, parse_json
from agentensemble_review._asking import apply_on_timeout
from agentensemble_review.errors import ReviewProtocolError
from agentensemble_review.models import ReviewDecision, ReviewRequest
from agentensemble_review.protocol import decision_from_json, request_to_json

POLL_SECONDS = 20.0
DEADLINE_MARGIN_SECONDS = 0.3
"""Stop waiting this long before the request's timeout, to expire it at the console in time."""


MAX_ANSWER_BYTES = 8_000_000
"""The most of an answer read (a review's view is bounded far below by the console's cleaning);
more is a protocol error, so a server answering with gigabytes or a gzip bomb costs the run
nothing."""


@dataclass(frozen=True)
class _Answer:
    status_code: int
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


def _send(client: httpx.Client, method: str, url: str, **options: Any) -> _Answer:
    """One request; its answer read as it streams in, to at most ``MAX_ANSWER_BYTES``. The
    console never compresses and is asked not to (``Accept-Encoding: identity``): a compressed
    answer is refused unread, since one inflated chunk of a gzip bomb is already megabytes."""
    with client.stream(method, url, **options) as answer:
        encoding = answer.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise ReviewProtocolError(
                f"the web console answered HTTP {answer.status_code} compressed "
                f"({encoding[:40]!r}), which it never does: not read"
            )
        chunks, size = [], 0
        for chunk in answer.iter_raw():
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise ReviewProtocolError(
                    f"the web console answered more than {MAX_ANSWER_BYTES} bytes "
                    f"(HTTP {answer.status_code}); a review's answer is a small JSON object"
                )
            chunks.append(chunk)
        return _Answer(answer.status_code, b"".join(chunks))


def _quoted(review_id: str) -> str:
    """A review id as one path segment: '?', '#' or '%' in it would end or change the path
    (the poll then asked for another resource, 404 for ever)."""
    return urllib.parse.quote(review_id, safe="")


def _body(answer: _Answer) -> dict[str, Any]:
    """The console's JSON answer; anything else is a protocol error, never a decision."""
    try:
        data: Any = parse_json(answer.content, what="the web console's answer")
    except UntrustedInputError:
        raise ReviewProtocolError(
            f"the web console answered HTTP {answer.status_code} with a body that is not JSON"
        ) from None
    if not isinstance(data, dict):
        raise ReviewProtocolError("the web console answered with JSON that is not an object")
    return data


class WebReviewHandler:
    """Asks the console at ``url`` (with its ``token``) and waits for a reviewer's decision."""

    def __init__(self, url: str, token: str, *, http_timeout: float = 5.0) -> None:
        self.url = url.rstrip("/")
        self._token = token
        register_secret(token)
        self._http_timeout = http_timeout

    def __repr__(self) -> str:
        return f"WebReviewHandler({self.url!r}, token='***')"

    def review(self, request: ReviewRequest) -> ReviewDecision:
        """Post the request, wait for the decision or the timeout (see the module docstring)."""
        limit = request.timeout_seconds
        deadline = (
            None if limit is None else time.monotonic() + max(0.0, limit - DEADLINE_MARGIN_SECONDS)
        )
        headers = {"Authorization": f"Bearer {self._token}", "Accept-Encoding": "identity"}
        with httpx.Client(headers=headers, timeout=self._http_timeout) as client:
            try:
                self._post(client, request, deadline)
            except (httpx.HTTPError, ReviewProtocolError) as exc:
                get_logger().warning("web console unreachable for review", error=str(exc))
                return apply_on_timeout(
                    request, reason=f"The web console could not be reached ({exc})"
                )
            return self._wait(client, request, deadline)

    def _remaining(self, deadline: float | None) -> float:
        return POLL_SECONDS if deadline is None else max(0.0, deadline - time.monotonic())

    def _post(self, client: httpx.Client, request: ReviewRequest, deadline: float | None) -> None:
        # request_to_json redacts the card like the run's events (``***``: a secret is leaving)
        body = {"run_id": current_run_id(), "request": request_to_json(request)}
        # ASCII JSON: a lone surrogate in model text is written as an escape (the console shows
        # it escaped) instead of failing to encode, so the human is asked whatever the model wrote
        answer = _send(
            client,
            "POST",
            f"{self.url}/api/reviews",
            content=json.dumps(body, ensure_ascii=True).encode("ascii"),
            headers={"Content-Type": "application/json"},
            timeout=min(self._http_timeout, self._remaining(deadline) + 0.1),
        )
        if answer.status_code not in (200, 201):
            raise ReviewProtocolError(
                f"the web console refused the review: HTTP {answer.status_code} {answer.text[:200]}"
            )

    def _wait(
        self, client: httpx.Client, request: ReviewRequest, deadline: float | None
    ) -> ReviewDecision:
        url = f"{self.url}/api/reviews/{_quoted(request.id)}"
        lost = 0
        while True:
            wait = min(POLL_SECONDS, self._remaining(deadline))
            if wait <= 0:
                break
            try:
                answer = _send(
                    client, "GET", url, params={"wait": f"{wait:.3f}"}, timeout=wait + 2.0
                )
            except httpx.HTTPError:
                time.sleep(min(0.5, self._remaining(deadline)))
                continue
            if answer.status_code == 404:  # the console restarted: ask again
                lost += 1
                try:
                    self._post(client, request, deadline)
                except (httpx.HTTPError, ReviewProtocolError):
                    lost += 1
                if lost > 1:  # not found again right after asking: never a busy loop
                    time.sleep(min(0.5, self._remaining(deadline)))
                continue
            lost = 0
            decision = self._decision(answer)
            if decision is not None:
                return decision
            if answer.status_code != 200:  # refused or failing: try again, without hammering
                time.sleep(min(0.5, self._remaining(deadline)))
            elif _body(answer).get("status") == "expired":
                return apply_on_timeout(request)
        return self._expire(client, request)

    def _expire(self, client: httpx.Client, request: ReviewRequest) -> ReviewDecision:
        try:
            answer = _send(
                client,
                "POST",
                f"{self.url}/api/reviews/{_quoted(request.id)}/expire",
                json={},
                timeout=1.0,
            )
            decision = self._decision(answer)
        except (httpx.HTTPError, ReviewProtocolError):
            decision = None
        return decision if decision is not None else apply_on_timeout(request)

    @staticmethod
    def _decision(answer: _Answer) -> ReviewDecision | None:
        if answer.status_code != 200:
            return None
        decision = _body(answer).get("decision")
        if not isinstance(decision, dict):
            return None
        wanted = {k: decision[k] for k in ("decision", "revised_output", "reason") if k in decision}
        who = decision.get("decided_by")  # the reviewer the console logged in: events, trace
        decided_by = who[:200] if isinstance(who, str) and who else None
        return decision_from_json(wanted).model_copy(update={"decided_by": decided_by})


__all__ = ["WebReviewHandler"]
