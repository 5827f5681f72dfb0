"""Review behind an HTTP endpoint: POST the request, get the decision now (200) or later (202).

The wire format is in ``agentensemble_review.protocol``. The handler fails closed: a garbled or
unknown decision raises ``ReviewProtocolError``; no decision in time, an unreachable endpoint,
an endpoint that keeps failing (5xx) or one saying the review has expired (410 Gone: its timeout
passed on the server's clock, e.g. while a durable run's worker was down) applies the request's
``on_timeout``, never approval. It never waits past
its deadline: the request's timeout, or the handler's own ``timeout`` if that is shorter.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import random
import time
from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from typing import Any

import httpx

from agentensemble.redaction import redact_text
from agentensemble_review._asking import apply_on_timeout, run_coroutine_sync, run_within
from agentensemble_review._format import format_duration
from agentensemble_review._log import get_logger
from agentensemble_review._webhook_parts import (
    ACCEPTED_ENCODINGS,
    BoundedBody,
    _Answer,
    _Deadline,
    _expired_reason,
    _finite_positive,
    _NoDecision,
    _same_origin,
    _seconds,
    _snippet,
    _timeout_reason,
    withdraw_url,
)
from agentensemble_review._webhook_safety import (
    header_ok,
    install_http_log_redaction,
    parse_retry_after,
    register_header_secrets,
    register_url_secrets,
    safe_url,
)
from agentensemble_review.errors import (
    ReviewError,
    ReviewProtocolError,
    ReviewRequestRefusedError,
)
from agentensemble_review.models import Edit, ExitEarly, ReviewDecision, ReviewRequest
from agentensemble_review.protocol import SIGNATURE_HEADER, decision_from_json, encode_request, sign

USER_AGENT = "agentensemble-review/0.1"
WITHDRAW_TIMEOUT = 2.0  # seconds for telling the webhook a run stopped waiting (best effort)
MAX_ANSWER_BYTES = 1_000_000
"""A longer answer is a protocol error: a decision is a small JSON object."""

_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_REFUSED_STATUSES = frozenset({400, 413, 422})
"""The service refused the request for its size or content: what the model put under review."""


def _redacted_decision(decision: ReviewDecision) -> ReviewDecision:
    """A webhook's decision with registered secrets redacted from its texts: an answer that
    echoes the bearer token or the signing secret must not carry it on to the model."""
    if isinstance(decision, ExitEarly) and decision.reason:
        return ExitEarly(redact_text(decision.reason), timed_out=decision.timed_out)
    if isinstance(decision, Edit):
        return Edit(redact_text(decision.revised_output))
    return decision


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


class WebhookReviewHandler:
    """Sends each review to ``url`` and waits for the decision (see ``protocol`` for the format).

    - ``secret``: sign each body with HMAC-SHA256 (header ``X-AgentEnsemble-Signature``).
    - ``timeout``: the longest this handler waits for a decision (seconds or timedelta); the
      request's own timeout applies too, and the shorter one wins. None: the request's only.
    - ``headers``: extra headers (e.g. Authorization), sent to ``url``'s origin only.
    - ``poll_interval`` / ``max_poll_interval``: the first pause between polls after a 202, and
      its cap (it grows by half each poll; a ``Retry-After`` header overrides it).
    - ``max_retries``: retries of one HTTP call after a connection error, a timeout, 429 or
      5xx, with exponential backoff; then ``on_timeout`` applies.
    - ``request_timeout``: the longest a single HTTP call may take.
    - ``transport``: an ``httpx.AsyncBaseTransport``, for tests or custom networking.

    Secrets and header values are never logged and never appear in ``repr``.
    """

    def __init__(
        self,
        url: str,
        secret: str | None = None,
        timeout: float | timedelta | None = None,
        headers: Mapping[str, str] | None = None,
        *,
        poll_interval: float = 0.5,
        max_poll_interval: float = 5.0,
        max_retries: int = 3,
        request_timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        try:
            parsed = httpx.URL(url)
        except (httpx.InvalidURL, TypeError, ValueError):
            raise ValueError(f"webhook url is not a valid URL: {safe_url(url)!r}") from None
        register_url_secrets(parsed)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(f"webhook url must be an absolute http(s) URL, got {safe_url(url)!r}")
        poll_interval = _finite_positive("poll_interval", poll_interval)
        max_poll_interval = _finite_positive("max_poll_interval", max_poll_interval)
        if max_poll_interval < poll_interval:
            raise ValueError("need 0 < poll_interval <= max_poll_interval")
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        request_timeout = _finite_positive("request_timeout", request_timeout)
        self._headers = dict(headers or {})
        register_header_secrets(self._headers, secret)
        for name, value in self._headers.items():
            if not header_ok(name, value):
                raise ValueError(
                    f"header {name!r} has a name or value HTTP cannot carry (non-ASCII, or a "
                    "line break or control character)"
                )
        install_http_log_redaction()
        self.url = url
        self._url = parsed
        self._secret = secret or None
        self.timeout = _seconds(timeout)
        self.poll_interval = poll_interval
        self.max_poll_interval = max_poll_interval
        self.max_retries = max_retries
        self.request_timeout = request_timeout
        self._transport = transport

    def __repr__(self) -> str:
        parts = [f"url={safe_url(self._url)!r}"]
        if self._secret:
            parts.append("secret='***'")
        if self._headers:
            parts.append(f"headers=[{', '.join(sorted(self._headers))}]")
        if self.timeout is not None:
            parts.append(f"timeout={self.timeout}")
        return f"WebhookReviewHandler({', '.join(parts)})"

    def _limit(self, request: ReviewRequest) -> float | None:
        limits = [s for s in (request.timeout_seconds, self.timeout) if s is not None]
        return min(limits) if limits else None

    # -- public --------------------------------------------------------------------------------

    async def areview(self, request: ReviewRequest) -> ReviewDecision:
        """POST ``request``, then wait (polling on 202) for the decision, within the deadline."""
        limit = self._limit(request)
        started = time.monotonic()
        deadline = _Deadline.starting_now(limit)
        log = get_logger()
        in_time, task = await run_within(self._exchange(request, deadline), limit)
        still_open = True
        if not in_time:
            reason = deadline.reason()
        else:
            try:
                return _redacted_decision(task.result())
            except _NoDecision as exc:
                reason = redact_text(str(exc))
                still_open = not exc.closed
            except ReviewError:
                raise
            except Exception as exc:  # anything else the answer caused: never a raw error
                raise ReviewProtocolError(
                    f"review webhook {safe_url(self._url)} could not be used: "
                    f"{type(exc).__name__}: {exc}"
                ) from None
        log.warning(
            "review.webhook_no_decision",
            url=safe_url(self._url),
            review_id=request.id,
            reason=reason,
            on_timeout=request.on_timeout.value,
            elapsed_s=round(time.monotonic() - started, 3),
        )
        if still_open:
            await self._withdraw(request, reason)
        return apply_on_timeout(request, reason=reason)

    async def _withdraw(self, request: ReviewRequest, reason: str) -> None:
        """Tell the webhook this run stopped waiting, so a person's later decision is refused
        there (410) instead of recorded and applied nowhere. Best effort and brief: a webhook
        without the route (404), or one that cannot be reached, is left as it is."""
        body = json.dumps({"id": request.id, "reason": reason[:500]}).encode()
        headers = self._post_headers(request, body)

        async def post() -> None:
            async with httpx.AsyncClient(
                transport=self._transport,
                follow_redirects=False,
                timeout=min(self.request_timeout, WITHDRAW_TIMEOUT),
            ) as client:
                url = withdraw_url(self._url, request.id)
                # the answer's body is never read: its status is all there is to know, and a
                # webhook answering with gigabytes (or a gzip bomb) must cost the run nothing
                async with client.stream("POST", url, content=body, headers=headers):
                    pass

        try:  # bounded as a whole: a drip-fed answer cannot hold it open
            await asyncio.wait_for(post(), WITHDRAW_TIMEOUT)
        except (httpx.HTTPError, OSError, asyncio.TimeoutError) as exc:
            get_logger().info(
                "review.webhook_withdraw_failed", url=safe_url(self._url), error=type(exc).__name__
            )

    def review(self, request: ReviewRequest) -> ReviewDecision:
        """Sync twin of ``areview`` (runs it on a private event loop)."""
        limit = self._limit(request)
        try:
            return run_coroutine_sync(
                lambda: self.areview(request), None if limit is None else limit + 5.0
            )
        except concurrent.futures.TimeoutError:
            return apply_on_timeout(request, reason=_timeout_reason(limit))

    # -- the exchange --------------------------------------------------------------------------

    def _post_headers(self, request: ReviewRequest, body: bytes) -> dict[str, str]:
        """What every POST about ``request`` carries: its id, and ``body``'s signature."""
        headers = {
            **self._headers,
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Accept-Encoding": ACCEPTED_ENCODINGS,
            "User-Agent": USER_AGENT,
            "X-AgentEnsemble-Review-Id": request.id,
        }
        if self._secret:
            headers[SIGNATURE_HEADER] = sign(body, self._secret)
        return headers

    async def _exchange(self, request: ReviewRequest, deadline: _Deadline) -> ReviewDecision:
        body = encode_request(request)
        headers = self._post_headers(request, body)
        async with httpx.AsyncClient(
            transport=self._transport, follow_redirects=False, timeout=self.request_timeout
        ) as client:
            answer = await self._call(client, "POST", self._url, headers, body, deadline)
            poll_url: httpx.URL | None = None
            delay = self.poll_interval
            while True:  # bounded by the deadline (each turn sleeps and makes one bounded call)
                if answer.status == 410:
                    raise _NoDecision(_expired_reason(request), closed=True)
                if answer.status == 200:
                    return self._decision(answer, poll_url or self._url)
                if answer.status != 202:
                    raise self._unexpected(answer, poll_url or self._url, len(body))
                location = answer.headers.get("Location")
                if location:
                    poll_url = self._poll_url(poll_url or self._url, location)
                elif poll_url is None:
                    raise ReviewProtocolError(
                        f"review webhook {safe_url(self._url)} answered 202 (pending) without a "
                        "Location header to poll",
                        status_code=202,
                    )
                await self._sleep(self._retry_after(answer) or delay, deadline)
                delay = min(delay * 1.5, self.max_poll_interval)
                poll_headers = {
                    **self._headers,
                    "Accept": "application/json",
                    "Accept-Encoding": ACCEPTED_ENCODINGS,
                    "User-Agent": USER_AGENT,
                }
                answer = await self._call(client, "GET", poll_url, poll_headers, None, deadline)

    def _poll_url(self, base: httpx.URL, location: str) -> httpx.URL:
        """Where a 202's ``Location`` says to poll: http(s) on the webhook's own origin only
        (scheme, host and port), refused without being fetched otherwise."""
        try:
            url = base.join(location)
        except (httpx.InvalidURL, TypeError, ValueError) as exc:
            raise ReviewProtocolError(
                f"review webhook {safe_url(self._url)} answered 202 with an invalid Location "
                f"({type(exc).__name__})",
                status_code=202,
            ) from None
        if url.scheme not in ("http", "https"):
            raise ReviewProtocolError(
                f"review webhook {safe_url(self._url)} answered 202 with a Location "
                f"that is not http(s): {safe_url(url)!r}",
                status_code=202,
            )
        if not _same_origin(url, self._url):
            raise ReviewProtocolError(
                f"review webhook {safe_url(self._url)} answered 202 with a Location on another "
                f"origin ({safe_url(url)!r}); it was not fetched",
                status_code=202,
            )
        return url

    async def _call(
        self,
        client: httpx.AsyncClient,
        method: str,
        url: httpx.URL,
        headers: Mapping[str, str],
        body: bytes | None,
        deadline: _Deadline,
    ) -> _Answer:
        """One HTTP call, retried after connection errors, timeouts, 429 and 5xx."""
        problem = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                await self._sleep(self._backoff(attempt), deadline)
            remaining = deadline.remaining()
            if remaining is not None and remaining <= 0:
                break
            per_call = (
                self.request_timeout if remaining is None else min(self.request_timeout, remaining)
            )
            try:
                # The whole call, not each read: a drip-fed answer cannot hold it open.
                answer = await asyncio.wait_for(
                    self._send(client, method, url, headers, body, per_call), per_call
                )
            except asyncio.TimeoutError:
                problem = f"no complete answer within {format_duration(per_call)}"
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            else:
                if answer.status not in _RETRY_STATUSES:
                    return answer
                problem = f"HTTP {answer.status} {answer.reason}".strip()
            get_logger().info(
                "review.webhook_attempt_failed",
                method=method,
                url=safe_url(url),
                attempt=attempt + 1,
                problem=problem,
            )
        else:
            raise _NoDecision(
                f"No decision: the review webhook {safe_url(url)} failed "
                f"{self.max_retries + 1} time(s), last with {problem}"
            )
        raise _NoDecision(deadline.reason() + (f" (last problem: {problem})" if problem else ""))

    async def _send(
        self,
        client: httpx.AsyncClient,
        method: str,
        url: httpx.URL,
        headers: Mapping[str, str],
        body: bytes | None,
        per_call: float,
    ) -> _Answer:
        http_request = client.build_request(
            method, url, headers=headers, content=body, timeout=per_call
        )
        response = await client.send(http_request, stream=True)
        try:
            declared = response.headers.get("Content-Length", "")
            if declared.strip().isdigit() and int(declared) > MAX_ANSWER_BYTES:
                raise ReviewProtocolError(
                    f"review webhook {safe_url(url)} answered more than "
                    f"{MAX_ANSWER_BYTES} bytes (Content-Length {declared.strip()[:20]}); a "
                    "decision is a small JSON object",
                    status_code=response.status_code,
                )
            if response.is_stream_consumed:  # an in-process transport's answer: read already
                answer = BoundedBody("identity", MAX_ANSWER_BYTES)
                raw_chunks: Any = _once(response.content)
            else:
                answer = BoundedBody(response.headers.get("Content-Encoding", ""), MAX_ANSWER_BYTES)
                raw_chunks = response.aiter_raw()
            async for chunk in raw_chunks:
                if not answer.feed(chunk):
                    raise ReviewProtocolError(
                        f"review webhook {safe_url(url)} answered more than "
                        f"{MAX_ANSWER_BYTES} bytes; a decision is a small JSON object",
                        status_code=response.status_code,
                    )
        finally:
            await response.aclose()
        return _Answer(
            response.status_code, response.reason_phrase, response.headers, answer.content
        )

    def _decision(self, answer: _Answer, url: httpx.URL) -> ReviewDecision:
        try:
            return decision_from_json(answer.content)
        except ReviewProtocolError as exc:
            raise ReviewProtocolError(
                f"review webhook {safe_url(url)} answered 200 with an unusable decision: {exc}",
                status_code=200,
            ) from exc

    def _unexpected(
        self, answer: _Answer, url: httpx.URL, request_bytes: int = 0
    ) -> ReviewProtocolError:
        if answer.status in _REFUSED_STATUSES:
            return ReviewRequestRefusedError(
                f"review webhook {safe_url(url)} refused the review request "
                f"({answer.status} {answer.reason}, request of {request_bytes} bytes)",
                status_code=answer.status,
                request_bytes=request_bytes,
            )
        hint = ""
        if answer.status == 401 and self._secret:
            hint = " (is the secret the same on both sides?)"
        elif answer.status == 401:
            hint = " (does it need a secret or an Authorization header?)"
        elif answer.status == 409:
            hint = " (it holds another review under this id)"
        return ReviewProtocolError(
            f"review webhook {safe_url(url)} answered {answer.status} {answer.reason}{hint}; "
            f"expected 200 with a decision or 202 pending. Body: {_snippet(answer.content)!r}",
            status_code=answer.status,
        )

    def _backoff(self, attempt: int) -> float:
        base: float = min(4.0, 0.25 * 2 ** (attempt - 1))
        return base * random.uniform(0.75, 1.25)

    @staticmethod
    def _retry_after(answer: _Answer) -> float | None:
        return parse_retry_after(answer.headers.get("Retry-After"))

    @staticmethod
    async def _sleep(seconds: float, deadline: _Deadline) -> None:
        remaining = deadline.remaining()
        if remaining is not None:
            if remaining <= 0:
                raise _NoDecision(deadline.reason())
            seconds = min(seconds, remaining)
        await asyncio.sleep(seconds)


__all__ = ["MAX_ANSWER_BYTES", "WebhookReviewHandler", "safe_url"]
