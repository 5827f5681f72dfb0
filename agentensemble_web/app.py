"""The console's web application: pages, the JSON API and the live stream (Starlette).

``create_app(token, host, port)`` builds it; ``WebConsoleServer`` serves it. Routes (all behind
``_guard.SecurityMiddleware``: login first, CSRF and Origin on every change):

- ``GET /login?token=T`` starts a browser session; ``GET /`` is the page (runs, a run, reviews,
  the trace viewer), ``GET /static/...`` its script and style.
- ``GET /api/session``: the page's CSRF token. ``GET /api/stream``: server-sent events.
- ``POST /api/events``: a batch of run events (``{"events": [...]}``, from ``WebConsole``).
- ``GET /api/runs``, ``GET /api/runs/{id}``: the runs and one run's events.
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

from agentensemble_review._server_guard import Guard
from agentensemble_web._guard import SecurityMiddleware, Sessions
from agentensemble_web._hub import Hub
from agentensemble_web._reviews import ReviewBoard, ReviewRefused
from agentensemble_web._runs import RunBoard
from agentensemble_web._sanitize import clean, clean_text

MAX_BATCH = 1_000
MAX_WAIT_SECONDS = 30.0
KEEPALIVE_SECONDS = 15.0
MAX_MESSAGES_PER_WRITE = 500
_STATIC = {
    "app.js": "text/javascript",
    "timeline.js": "text/javascript",
    "app.css": "text/css",
    "index.html": "text/html",
}


class ConsoleState:
    """Everything the console holds; lives on the server's event loop."""

    def __init__(self) -> None:
        self.hub = Hub()
        self.runs = RunBoard(self.hub)
        self.reviews = ReviewBoard(self.hub)


def _error(status: HTTPStatus, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


async def _json_body(request: Request) -> Any:
    try:
        return json.loads(await request.body())
    except (ValueError, RecursionError) as exc:
        raise ReviewRefused(HTTPStatus.BAD_REQUEST, f"body is not valid JSON: {exc}") from None


def _static_file(name: str) -> bytes:
    return (resources.files("agentensemble_web") / "static" / name).read_bytes()


def create_app(token: str, host: str, port: int, allowed_hosts: tuple[str, ...] = ()) -> Starlette:
    """The console app for a server bound to ``host:port`` with login ``token``."""
    state = ConsoleState()
    files = {name: _static_file(name) for name in _STATIC}

    async def page(request: Request) -> Response:
        return Response(files["index.html"], media_type="text/html; charset=utf-8")

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in files or name == "index.html":
            return _error(HTTPStatus.NOT_FOUND, "not found")
        return Response(files[name], media_type=_STATIC[name] + "; charset=utf-8")

    async def session(request: Request) -> Response:
        return JSONResponse({"principal": request.state.principal, "csrf": request.state.csrf})

    async def post_events(request: Request) -> Response:
        body = await _json_body(request)
        events = body.get("events") if isinstance(body, dict) else None
        if not isinstance(events, list) or len(events) > MAX_BATCH:
            return _error(
                HTTPStatus.BAD_REQUEST, f"body must be {{'events': [...]}} with <= {MAX_BATCH}"
            )
        accepted = 0
        for raw in events:
            if (
                isinstance(raw, dict)
                and isinstance(raw.get("type"), str)
                and isinstance(raw.get("run_id"), str)
                and 0 < len(raw["run_id"]) <= 100
                and len(raw["type"]) <= 64
            ):
                state.runs.add(clean(raw))
                accepted += 1
        return JSONResponse({"accepted": accepted, "refused": len(events) - accepted})

    async def list_runs(request: Request) -> Response:
        return JSONResponse({"runs": state.runs.summaries()})

    async def get_run(request: Request) -> Response:
        run = state.runs.get(request.path_params["run_id"])
        if run is None:
            return _error(HTTPStatus.NOT_FOUND, "no run with that id")
        return JSONResponse({"run": run.summary(), "events": list(run.events)})

    async def list_reviews(request: Request) -> Response:
        return JSONResponse({"reviews": [r.view() for r in state.reviews.all()]})

    async def post_review(request: Request) -> Response:
        body = await _json_body(request)
        req = body.get("request") if isinstance(body, dict) else None
        run_id = body.get("run_id") if isinstance(body, dict) else None
        if not isinstance(req, dict) or not isinstance(req.get("id"), str):
            return _error(HTTPStatus.BAD_REQUEST, "body must be {'request': {'id': ..., ...}}")
        if not 0 < len(req["id"]) <= 200 or (run_id is not None and not isinstance(run_id, str)):
            return _error(HTTPStatus.BAD_REQUEST, "'id' (<= 200 chars) and 'run_id' are strings")
        review_id = req["id"]
        review = state.reviews.add(
            review_id, clean_text(run_id, 100) if run_id else None, clean(req)
        )
        return JSONResponse(review.view(), status_code=HTTPStatus.CREATED)

    async def get_review(request: Request) -> Response:
        try:
            wait = min(MAX_WAIT_SECONDS, max(0.0, float(request.query_params.get("wait", "0"))))
        except ValueError:
            return _error(HTTPStatus.BAD_REQUEST, "'wait' must be a number of seconds")
        review = await state.reviews.wait(request.path_params["review_id"], wait)
        if review is None:
            return _error(HTTPStatus.NOT_FOUND, "no review with that id")
        return JSONResponse(review.view())

    async def decide(request: Request) -> Response:
        body = await _json_body(request)
        review = state.reviews.decide(
            request.path_params["review_id"], body, request.state.principal
        )
        return JSONResponse(review.view())

    async def expire(request: Request) -> Response:
        if request.state.principal != "api":
            return _error(HTTPStatus.FORBIDDEN, "only the waiting review handler expires a review")
        review = state.reviews.expire_now(request.path_params["review_id"])
        if review is None:
            return _error(HTTPStatus.NOT_FOUND, "no review with that id")
        return JSONResponse(review.view())

    async def stream(request: Request) -> Response:
        sub = state.hub.subscribe()
        if sub is None:
            busy = "the console is stopping" if state.hub.closed else "too many open pages"
            return _error(HTTPStatus.SERVICE_UNAVAILABLE, busy)

        async def messages() -> AsyncIterator[str]:
            try:
                yield "retry: 2000\n\n"
                while not sub.closed:
                    try:
                        message = await asyncio.wait_for(sub.queue.get(), KEEPALIVE_SECONDS)
                    except asyncio.TimeoutError:
                        yield ": keep-alive\n\n"
                        continue
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
            Route("/api/reviews", post_review, methods=["POST"]),
            Route("/api/reviews/{review_id}", get_review, methods=["GET"]),
            Route("/api/reviews/{review_id}/decision", decide, methods=["POST"]),
            Route("/api/reviews/{review_id}/expire", expire, methods=["POST"]),
        ],
        middleware=[
            Middleware(
                SecurityMiddleware,
                guard=Guard(host, port, token, allowed_hosts),
                sessions=Sessions(),
            )
        ],
        exception_handlers={ReviewRefused: refused},
    )
    app.state.console = state
    return app


__all__ = ["ConsoleState", "create_app"]
