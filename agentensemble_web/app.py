"""The console's web application: pages, the JSON API and the live stream (Starlette).

``create_app(token, host, port)`` builds it; ``WebConsoleServer`` serves it. Routes (all behind
``_guard.SecurityMiddleware``: login first, CSRF and Origin on every change):

- ``GET /login?token=T`` starts a browser session; ``GET /`` is the page (runs, a run, reviews,
  the trace viewer), ``GET /static/...`` its script and style.
- ``GET /api/session``: the page's CSRF token. ``GET /api/stream``: server-sent events.
- ``POST /api/events``: a batch of run events (``{"events": [...]}``, from ``WebConsole``);
  like holding and expiring a review, for the console's token only (the run's process).
- ``GET /api/runs?limit=&offset=&q=&status=``: a page of runs, newest first, and the total;
  ``GET /api/runs/{id}``: one run and its events. ``GET /api/audit``: decisions, newest first.
- ``POST /api/reviews``: hold a review (from ``WebReviewHandler``); ``GET /api/reviews``;
  ``GET /api/reviews/{id}?wait=S`` waits up to S seconds for its decision;
  ``POST /api/reviews/{id}/decision``: a reviewer's decision; ``POST /api/reviews/{id}/expire``:
  the handler stopped waiting (its ``on_timeout`` applies; later decisions get 410).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from http import HTTPStatus
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agentensemble.serve._hardened import PARSED, Hardened, Limits, declare_surface
from agentensemble.untrusted import UntrustedInputError, aparse_json
from agentensemble_review._server_guard import Guard
from agentensemble_web._guard import SecurityMiddleware, Sessions
from agentensemble_web._hub import Hub
from agentensemble_web._reviews import ReviewBoard, ReviewRefused
from agentensemble_web._runs import RunBoard
from agentensemble_web._sanitize import clean, clean_text
from agentensemble_web.reviewers import ReviewerBook
from agentensemble_web.store import PAGE_SIZE_MAX, Store

SURFACE = declare_surface("web", "the web console (agentensemble serve, WebConsoleServer)")
LIMITS = Limits(max_body_bytes=2_000_000, max_json_depth=100, max_json_items=200_000)
"""A batch of run events is larger than an agent's request: up to ``MAX_BATCH`` events."""
MAX_BATCH = 1_000
MAX_WAIT_SECONDS = 30.0
KEEPALIVE_SECONDS = 15.0
MAX_MESSAGES_PER_WRITE = 500
RECENT_DECIDED = 50
_STATIC = {
    "app.js": "text/javascript",
    "timeline.js": "text/javascript",
    "memory.js": "text/javascript",
    "workflow.js": "text/javascript",
    "reviews.js": "text/javascript",
    "live.js": "text/javascript",
    "app.css": "text/css",
    "index.html": "text/html",
}


class _JSON(JSONResponse):
    """JSON answers in ASCII: a lone surrogate a model or a reviewer wrote (valid in JSON as an
    escape) is sent as an escape instead of failing to encode (a 500 after a decision was
    taken would leave its run waiting until on_timeout applied)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(
            content, ensure_ascii=True, allow_nan=False, separators=(",", ":")
        ).encode("ascii")


class ConsoleState:
    """Everything the console holds; lives on the server's event loop."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store if store is not None else Store()
        self.hub = Hub()
        self.runs = RunBoard(self.hub, self.store)
        self.reviews = ReviewBoard(self.hub, self.store)
        self.reviewers = ReviewerBook(self.store.connection)

    def stop(self) -> None:
        """The server is stopping: end the streams and the long polls, so it stops at once."""
        self.hub.close_all()
        self.reviews.release_all()


def _int(request: Request, name: str, default: int, high: int) -> int:
    raw = request.query_params.get(name, "")
    if not raw:
        return default
    if not raw.isdigit() or len(raw) > 9:
        raise ReviewRefused(HTTPStatus.BAD_REQUEST, f"'{name}' must be a whole number")
    return min(int(raw), high)


def _error(status: HTTPStatus, message: str, **extra: Any) -> JSONResponse:
    return _JSON({"error": message, **extra}, status_code=status)


def _reporters_only(what: str) -> JSONResponse:
    """403 for a browser session (a named reviewer, or the console's own login) on a route of
    the run's process: what runs did and which reviews wait is reported with the console's
    token (``WebConsole``, ``WebReviewHandler``), never written by whoever decides reviews."""
    return _error(
        HTTPStatus.FORBIDDEN,
        f"only the run's process (the console's token as a Bearer header) {what}",
    )


async def _json_body(request: Request) -> Any:
    state = request.scope.get("state", {})
    if PARSED in state:  # parsed and bounded once, by the hardened setup
        return state[PARSED]
    try:
        return await aparse_json(await request.body(), what="body")
    except UntrustedInputError as exc:
        raise ReviewRefused(HTTPStatus.BAD_REQUEST, str(exc)) from None


def _static_file(name: str) -> bytes:
    return (resources.files("agentensemble_web") / "static" / name).read_bytes()


def create_app(
    token: str,
    host: str,
    port: int,
    allowed_hosts: tuple[str, ...] = (),
    store: Store | None = None,
) -> Starlette:
    """The console app for a server bound to ``host:port`` with login ``token``, keeping its
    history in ``store`` (in memory when None)."""
    state = ConsoleState(store)
    guard = Guard(host, port, token, allowed_hosts)
    files = {name: _static_file(name) for name in _STATIC}

    async def page(request: Request) -> Response:
        return Response(files["index.html"], media_type="text/html; charset=utf-8")

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in files or name == "index.html":
            return _error(HTTPStatus.NOT_FOUND, "not found")
        return Response(files[name], media_type=_STATIC[name] + "; charset=utf-8")

    async def session(request: Request) -> Response:
        return _JSON({"principal": request.state.principal, "csrf": request.state.csrf})

    async def post_events(request: Request) -> Response:
        if request.state.principal != "api":
            return _reporters_only("reports a run's events")
        body = await _json_body(request)
        events = body.get("events") if isinstance(body, dict) else None
        if not isinstance(events, list) or len(events) > MAX_BATCH:
            return _error(
                HTTPStatus.BAD_REQUEST, f"body must be {{'events': [...]}} with <= {MAX_BATCH}"
            )
        accepted = 0
        touched: set[str] = set()
        for raw in events:
            if (
                isinstance(raw, dict)
                and isinstance(raw.get("type"), str)
                and isinstance(raw.get("run_id"), str)
                and 0 < len(raw["run_id"]) <= 100
                and len(raw["type"]) <= 64
            ):
                state.runs.add(clean(raw))
                touched.add(raw["run_id"])
                accepted += 1
        state.runs.flush()
        for review in state.reviews.waiting_for_context(touched):
            req = review.request
            state.reviews.add_context(
                review,
                state.runs.review_context(
                    review.run_id, req.get("tool_name"), str(req.get("task_description", ""))
                ),
            )
        return _JSON({"accepted": accepted, "refused": len(events) - accepted})

    async def list_runs(request: Request) -> Response:
        limit = _int(request, "limit", 50, PAGE_SIZE_MAX)
        offset = _int(request, "offset", 0, 10**9)
        query = request.query_params.get("q", "")[:200]
        status = request.query_params.get("status", "")[:40]
        runs, total = state.runs.page(limit=limit, offset=offset, query=query, status=status)
        return _JSON({"runs": runs, "total": total, "limit": limit, "offset": offset})

    async def get_run(request: Request) -> Response:
        run = state.runs.get(request.path_params["run_id"])
        if run is None:
            return _error(HTTPStatus.NOT_FOUND, "no run with that id")
        return _JSON({"run": run.summary(), "events": list(run.events)})

    async def list_reviews(request: Request) -> Response:
        # every pending review and the latest decided ones (the audit pages through all)
        reviews = state.reviews.all()
        pending = [r for r in reviews if r.status == "pending"]
        done = [r for r in reviews if r.status != "pending"][-RECENT_DECIDED:]
        return _JSON({"reviews": [r.view() for r in pending + done]})

    async def audit(request: Request) -> Response:
        limit = _int(request, "limit", 100, PAGE_SIZE_MAX)
        offset = _int(request, "offset", 0, 10**9)
        return _JSON({"decisions": state.store.decisions(limit=limit, offset=offset)})

    async def post_review(request: Request) -> Response:
        if request.state.principal != "api":
            return _reporters_only("holds a review")
        body = await _json_body(request)
        req = body.get("request") if isinstance(body, dict) else None
        run_id = body.get("run_id") if isinstance(body, dict) else None
        if not isinstance(req, dict) or not isinstance(req.get("id"), str):
            return _error(HTTPStatus.BAD_REQUEST, "body must be {'request': {'id': ..., ...}}")
        if not 0 < len(req["id"]) <= 200 or (run_id is not None and not isinstance(run_id, str)):
            return _error(HTTPStatus.BAD_REQUEST, "'id' (<= 200 chars) and 'run_id' are strings")
        if "/" in req["id"]:  # its routes could never find it: the handler would wait for nothing
            return _error(HTTPStatus.BAD_REQUEST, "a review 'id' holds no '/'")
        review_id = req["id"]
        review = state.reviews.add(
            review_id, clean_text(run_id, 100) if run_id else None, clean(req)
        )
        cleaned = review.request
        state.reviews.add_context(
            review,
            state.runs.review_context(
                review.run_id, cleaned.get("tool_name"), str(cleaned.get("task_description", ""))
            ),
        )
        return _JSON(review.view(), status_code=HTTPStatus.CREATED)

    async def get_review(request: Request) -> Response:
        try:
            wait = min(MAX_WAIT_SECONDS, max(0.0, float(request.query_params.get("wait", "0"))))
        except ValueError:
            return _error(HTTPStatus.BAD_REQUEST, "'wait' must be a number of seconds")
        review = await state.reviews.wait(request.path_params["review_id"], wait)
        if review is None:
            return _error(HTTPStatus.NOT_FOUND, "no review with that id")
        return _JSON(review.view())

    async def decide(request: Request) -> Response:
        body = await _json_body(request)
        review = state.reviews.decide(
            request.path_params["review_id"], body, request.state.principal
        )
        return _JSON(review.view())

    async def expire(request: Request) -> Response:
        if request.state.principal != "api":
            return _reporters_only("expires a review")
        review = state.reviews.expire_now(request.path_params["review_id"])
        if review is None:
            return _error(HTTPStatus.NOT_FOUND, "no review with that id")
        return _JSON(review.view())

    async def stream(request: Request) -> Response:
        sub = state.hub.subscribe(request.state.session_id)
        if sub is None:
            return _error(HTTPStatus.SERVICE_UNAVAILABLE, "the console is stopping")

        who, started = request.state.principal, request.state.session_started

        def revoked() -> bool:
            """A named reviewer revoked (or added again, with a new token) since their session
            started: the stream ends before another word."""
            return (
                who not in ("api", "console")
                and started is not None
                and state.reviewers.revoked(who, started)
            )

        async def messages() -> AsyncIterator[str]:
            try:
                yield "retry: 2000\n\n"
                while not sub.closed:
                    try:
                        message = await asyncio.wait_for(sub.queue.get(), KEEPALIVE_SECONDS)
                    except asyncio.TimeoutError:
                        if revoked():
                            break
                        state.reviews.all()  # expires overdue and abandoned reviews (published)
                        yield ": keep-alive\n\n"
                        continue
                    if message is not None and revoked():
                        break
                    chunk = []
                    while message is not None:  # send what is queued in one write
                        chunk.append(f"data: {json.dumps(message, ensure_ascii=True)}\n\n")
                        if sub.queue.empty() or len(chunk) >= MAX_MESSAGES_PER_WRITE:
                            break
                        message = sub.queue.get_nowait()
                    if chunk:
                        yield "".join(chunk)
                    if message is None:
                        break
            finally:
                state.hub.unsubscribe(sub)

        return StreamingResponse(messages(), media_type="text/event-stream")

    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ReviewRefused)
        return _error(exc.status, str(exc), **exc.extra)

    app = Starlette(
        routes=[
            Route("/", page, methods=["GET"]),
            Route("/static/{name}", static, methods=["GET"]),
            Route("/api/session", session, methods=["GET"]),
            Route("/api/stream", stream, methods=["GET"]),
            Route("/api/events", post_events, methods=["POST"]),
            Route("/api/runs", list_runs, methods=["GET"]),
            Route("/api/runs/{run_id}", get_run, methods=["GET"]),
            Route("/api/reviews", list_reviews, methods=["GET"]),
            Route("/api/audit", audit, methods=["GET"]),
            Route("/api/reviews", post_review, methods=["POST"]),
            Route("/api/reviews/{review_id}", get_review, methods=["GET"]),
            Route("/api/reviews/{review_id}/decision", decide, methods=["POST"]),
            Route("/api/reviews/{review_id}/expire", expire, methods=["POST"]),
        ],
        middleware=[
            Middleware(
                Hardened,
                surface=SURFACE,
                allowed_hosts=guard.host_allowed,
                port=port,
                limits=LIMITS,
                foreign_host_status=HTTPStatus.FORBIDDEN,
            ),
            Middleware(
                SecurityMiddleware,
                guard=guard,
                sessions=Sessions(state.store),
                reviewers=state.reviewers.who,
                revoked=state.reviewers.revoked,
            ),
        ],
        exception_handlers={ReviewRefused: refused},
    )
    app.state.console = state
    return app


__all__ = ["ConsoleState", "create_app"]
