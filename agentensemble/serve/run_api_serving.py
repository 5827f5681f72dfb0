"""``run_api``: runs of ensembles over plain HTTP, for a product's front end (extra ``[serve]``).

- ``POST /runs`` ``{"ensemble": name, "inputs": {...}}``: 202 ``{"run_id"}``; bad inputs are
  refused (400) before anything runs;
- ``GET /runs/{id}``: its state (queued, running, waiting_review, succeeded, failed,
  cancelled), outputs, error, usage and cost, and the decisions taken on its reviews;
- ``GET /runs/{id}/events``: its events as server-sent events, each with an id; a client that
  reconnects with ``Last-Event-ID`` gets what came after it; comments keep an idle stream open;
  a finished run's stream ends, and asked again past its end answers 204 (an ``EventSource``
  then stops reconnecting);
- ``POST /runs/{id}/cancel``; ``GET /runs/{id}/reviews`` (pending reviews);
- ``POST /reviews/{review_id}`` ``{"decision": "approve" | "edit" | "reject", ...}``: the same
  rules as every review channel (``_run_api_runs.checked_decision``), recorded with who decided;
- ``GET /openapi.json``: the OpenAPI description; ``GET /`` the ``page`` given, if any.

Served through the one hardened setup (``_hardened.Hardened``: Host, bearer token, Origin and
``Sec-Fetch-Site`` on state changes, JSON-only bounded bodies; ``hardened_server`` adds the
connection cap and header deadline). Runs belong to their submitter (``_run_api_runs``).
With ``durable``, each run is a durable run of the runtime and survives a restart of the API
(``_run_api_durable``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agentensemble._run import check_setup, execute
from agentensemble.errors import ConfigurationError
from agentensemble.events import EnsembleCompleted
from agentensemble.serve._hardened import PARSED, Hardened, Limits, declare_surface
from agentensemble.serve._http_guard import allowed_host_names
from agentensemble.serve._run_api_review import RunAPIReviewHandler, current_run
from agentensemble.serve._run_api_runs import (
    FINISHED,
    STATES,
    Refused,
    RunBook,
    RunLimits,
    RunRecord,
    checked_decision,
    find_tool,
)
from agentensemble.serve._shape import (
    BadArguments,
    EnsembleSource,
    check_arguments,
    check_name,
    ensemble_of,
    error_text,
    input_kinds,
    input_schema,
)

SURFACE = declare_surface(
    "run-api", "runs of ensembles over HTTP: submit, watch, cancel, review (run_api, serve-api)"
)
SSE_HEADERS = {"cache-control": "no-store", "x-accel-buffering": "no"}
PAGE_HEADERS = {
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    "content-security-policy": "frame-ancestors 'none'; connect-src 'self'",
}


def _caller(request: Request) -> str:
    return str(request.scope.get("state", {}).get("caller", ""))


def _refused(error: Refused) -> JSONResponse:
    return JSONResponse({"error": error.message}, status_code=error.status)


def _not_found(what: str = "run") -> JSONResponse:
    return JSONResponse({"error": f"no {what} with that id (of yours)"}, status_code=404)


class _Watched(StreamingResponse):
    """An event stream that holds one of its caller's stream places until it ends, however it
    ends (read to its end, the client gone, the server stopping)."""

    def __init__(self, content: AsyncIterator[str], release: Callable[[], None]) -> None:
        super().__init__(content, media_type="text/event-stream", headers=SSE_HEADERS)
        self.release = release

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.release()


class _RunAPI:
    """The routes' shared state: the ensembles, their inputs, the runs held."""

    def __init__(
        self, ensembles: Mapping[str, EnsembleSource], durable: Any, limits: RunLimits
    ) -> None:
        self.sources = dict(ensembles)
        self.templates = {name: ensemble_of(source) for name, source in self.sources.items()}
        self.kinds = {name: input_kinds(e) for name, e in self.templates.items()}
        self.book = RunBook(limits)
        self.limits = limits
        self.runtime = durable
        self.durable: Any = None
        self.stopping = False
        self.streams: Counter[str] = Counter()  # caller -> event streams open

    def durable_runs(self) -> Any:
        if self.runtime is not None and self.durable is None:
            from agentensemble.serve._run_api_durable import DurableRuns

            self.durable = DurableRuns(self.runtime)
        return self.durable

    # -- routes ---------------------------------------------------------------------------

    async def submit(self, request: Request) -> Response:
        body = request.scope.get("state", {}).get(PARSED)
        try:
            name, inputs = self._checked_submission(body)
            record = self.book.add(name, _caller(request))
            if self.runtime is not None:
                await self.durable_runs().remember(record.id, record.owner, name, record.created_at)
        except Refused as error:
            return _refused(error)
        record.task = asyncio.ensure_future(self._run(record, inputs))
        return JSONResponse(
            {"run_id": record.id, "state": record.state},
            status_code=202,
            headers={"location": f"/runs/{record.id}"},
        )

    def _checked_submission(self, body: Any) -> tuple[str, dict[str, Any]]:
        if not isinstance(body, dict):
            raise Refused(400, 'the body must be a JSON object: {"ensemble": ..., "inputs": {...}}')
        unknown = sorted(set(body) - {"ensemble", "inputs"})
        if unknown:
            raise Refused(400, f"unknown field(s): {', '.join(map(repr, unknown))[:200]}")
        name = body.get("ensemble")
        if not isinstance(name, str) or name not in self.sources:
            known = ", ".join(self.sources)
            raise Refused(
                400, f"'ensemble' must name a served ensemble ({known}); got {name!r:.80}"
            )
        inputs = body.get("inputs", {})
        if not isinstance(inputs, dict):
            raise Refused(400, "'inputs' must be a JSON object of the ensemble's inputs")
        try:
            return name, check_arguments(self.kinds[name], inputs)
        except BadArguments as error:
            raise Refused(400, str(error)) from None

    async def _run(self, record: RunRecord, inputs: dict[str, Any]) -> None:
        current_run.set(record)  # this task's context: its reviews ask this run's caller
        record.set_state("running")
        try:
            record.built = ensemble_of(self.sources[record.ensemble])
            if self.runtime is None:
                output = await execute(record.built, inputs, [record], stream=True)
            else:
                output = await self._run_durably(record, inputs)
        except asyncio.CancelledError:
            if self.runtime is not None and not self.stopping:
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(self.runtime.cancel, record.id)
            record.finish("cancelled", error="cancelled")
            return
        except Exception as error:
            record.finish("failed", error=error_text(error))
            return
        record.complete(record.built, output)

    async def _run_durably(self, record: RunRecord, inputs: dict[str, Any]) -> Any:
        output = None
        async for event in self.runtime.astream(record.ensemble, inputs, run_id=record.id):
            record.on_event(event)
            if isinstance(event, EnsembleCompleted):
                output = event.output
        return output if output is not None else await self.runtime.aresult(record.id)

    async def read(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        record = self.book.get(run_id, _caller(request))
        if record is not None:
            view = record.view()
            if self.runtime is not None and record.state not in FINISHED:
                pending = await self.durable_runs().pending(run_id)
                view["pending_reviews"] = [r["review_id"] for r in pending]
                if pending:
                    view["state"] = "waiting_review"
                view["decisions"] = await self.durable_runs().decisions(run_id)
            return JSONResponse(view)
        row = await self._durable_row(request)
        if row is None:
            return _not_found()
        try:
            view = await self.durable_runs().view(row, self._template(row["ensemble"]))
        except KeyError:
            return _not_found()
        return JSONResponse(view)

    async def _durable_row(self, request: Request) -> dict[str, Any] | None:
        """A durable run of the caller's this process does not hold (a restart came since)."""
        if self.runtime is None:
            return None
        run_id = request.path_params["run_id"]
        row: dict[str, Any] | None = await self.durable_runs().owned(run_id, _caller(request))
        return row

    def _template(self, name: str) -> Any:
        return self.templates.get(name)

    async def events(self, request: Request) -> Response:
        record = self.book.get(request.path_params["run_id"], _caller(request))
        if record is None:
            row = await self._durable_row(request)
            if row is None:
                return _not_found()
            # held by no process's buffer: its state now, once
            view = await self.durable_runs().view(row, self._template(row["ensemble"]))
            data = json.dumps({"type": "RunState", "state": view["state"]})
            return Response(f"data: {data}\n\n", media_type="text/event-stream")
        last = _last_event_id(request)
        if record.state in FINISHED and not record.since(last) and last > 0:
            return Response(status_code=204)  # past the end: an EventSource stops here
        caller = record.owner
        most = self.limits.max_streams_per_caller
        if self.streams[caller] >= most:
            return _refused(
                Refused(429, f"you already hold {most} event streams open: close one first")
            )
        self.streams[caller] += 1
        return _Watched(self._stream(record, last), lambda: self._closed_stream(caller))

    def _closed_stream(self, caller: str) -> None:
        self.streams[caller] -= 1
        if self.streams[caller] <= 0:
            del self.streams[caller]

    async def _stream(self, record: RunRecord, last: int) -> AsyncIterator[str]:
        chunk = ["retry: 1000\n\n"]
        while True:
            wake = record.wake
            batch = record.since(last)
            if batch and batch[0][0] > last + 1 and last > 0:
                chunk.append(
                    f": {batch[0][0] - last - 1} events were dropped (the buffer bound)\n\n"
                )
            chunk.extend(f"id: {number}\ndata: {text}\n\n" for number, text in batch)
            if batch:
                last = batch[-1][0]
            if chunk:  # what came meanwhile, in one write
                yield "".join(chunk)
                chunk = []
            if record.state in FINISHED and not record.since(last):
                return
            try:
                await asyncio.wait_for(wake.wait(), self.limits.keepalive_seconds)
                await asyncio.sleep(0)  # the events published in the same burst: one write
            except asyncio.TimeoutError:
                yield ": keepalive\n\n"

    async def cancel(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        record = self.book.get(run_id, _caller(request))
        if record is None:
            row = await self._durable_row(request)
            if row is None:
                return _not_found()
            await self.durable_runs().cancel(run_id)
            return JSONResponse({"run_id": run_id, "state": "cancelled"}, status_code=202)
        if record.state in FINISHED:
            return JSONResponse(
                {"error": f"the run already ended ({record.state})", "state": record.state},
                status_code=409,
            )
        if record.task is not None:
            record.task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(record.task), 5.0)
        return JSONResponse({"run_id": run_id, "state": record.state}, status_code=202)

    async def reviews(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        record = self.book.get(run_id, _caller(request))
        if self.runtime is not None:
            if record is None and await self._durable_row(request) is None:
                return _not_found()
            return JSONResponse({"reviews": await self.durable_runs().pending(run_id)})
        if record is None:
            return _not_found()
        return JSONResponse({"reviews": [review.view() for review in record.pending()]})

    async def decide(self, request: Request) -> Response:
        review_id = request.path_params["review_id"]
        body = request.scope.get("state", {}).get(PARSED)
        caller = _caller(request)
        try:
            if self.runtime is not None:
                return await self._decide_durably(review_id, body, caller)
            found = self.book.review(review_id, caller)
            if found is None:
                return _not_found("review")
            record, review = found
            tool = find_tool(record.built, review.request.get("tool_name"))
            decided = record.decide(review, checked_decision(body, tool), caller)
        except Refused as error:
            return _refused(error)
        return JSONResponse({"review_id": review_id, "decision": decided})

    async def _decide_durably(self, review_id: str, body: Any, caller: str) -> Response:
        run_id = review_id.split(":", 1)[0]  # a durable review's id starts with its run's
        row = await self.durable_runs().owned(run_id, caller)
        if row is None:
            return _not_found("review")
        ensemble = self._template(row["ensemble"])
        decided = await self.durable_runs().decide(run_id, review_id, body, ensemble, caller)
        return JSONResponse({"review_id": review_id, "decision": decided})

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(openapi_description(self.templates))

    async def shutdown(self) -> None:
        """The server stops: plain runs are cancelled; durable runs stay to resume later."""
        self.stopping = True
        tasks = [
            r.task for r in self.book.runs.values() if r.task is not None and not r.task.done()
        ]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5.0)
        if self.durable is not None:
            await asyncio.to_thread(self.durable.close)


def _last_event_id(request: Request) -> int:
    """The id after which a stream resumes: ``Last-Event-ID`` (or ``?last_event_id=``)."""
    given = request.headers.get("last-event-id") or request.query_params.get("last_event_id")
    if given is None or not given.strip().isdigit() or len(given.strip()) > 18:
        return 0
    return int(given.strip())


def openapi_description(templates: Mapping[str, Any]) -> dict[str, Any]:
    """The OpenAPI 3.1 description of the run API, the served ensembles' inputs included."""
    error = {"$ref": "#/components/schemas/Error"}

    def answer(text: str, schema: Any = None) -> dict[str, Any]:
        content = {"application/json": {"schema": schema}} if schema else {}
        return {"description": text, **({"content": content} if content else {})}

    refusals = {
        "401": answer("no valid bearer token", error),
        "404": answer("no such run (of this caller's)", error),
    }
    run_id = [{"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}]
    submission = {
        "oneOf": [
            {
                "type": "object",
                "properties": {"ensemble": {"const": name}, "inputs": input_schema(ensemble)},
                "required": ["ensemble"],
                "additionalProperties": False,
            }
            for name, ensemble in templates.items()
        ]
    }
    json_body = {"required": True, "content": {"application/json": {"schema": {"type": "object"}}}}
    decision = {
        "type": "object",
        "properties": {
            "decision": {"enum": ["approve", "edit", "reject"]},
            "revised_output": {"type": "string", "description": "edit: the replacing text"},
            "arguments": {"type": "object", "description": "edit of a tool call: its arguments"},
            "reason": {"type": "string", "description": "reject: why"},
        },
        "required": ["decision"],
        "additionalProperties": False,
    }
    run = {
        "type": "object",
        "properties": {
            "run_id": {"type": "string"},
            "ensemble": {"type": "string"},
            "state": {"enum": list(STATES)},
            "outputs": {"type": ["object", "null"]},
            "error": {"type": ["string", "null"]},
            "usage": {"type": ["object", "null"]},
            "pending_reviews": {"type": "array", "items": {"type": "string"}},
            "decisions": {"type": "array", "items": {"type": "object"}},
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "agentensemble run API", "version": "1"},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {"type": "object", "properties": {"error": {"type": "string"}}},
                "Run": run,
                "Decision": decision,
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/runs": {
                "post": {
                    "summary": "Start a run",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": submission}},
                    },
                    "responses": {
                        "202": answer("started", {"type": "object"}),
                        "400": answer("bad inputs", error),
                        "429": answer("too many runs of this caller in flight", error),
                        **refusals,
                    },
                }
            },
            "/runs/{run_id}": {
                "get": {
                    "summary": "A run's state and output",
                    "parameters": run_id,
                    "responses": {
                        "200": answer("the run", {"$ref": "#/components/schemas/Run"}),
                        **refusals,
                    },
                }
            },
            "/runs/{run_id}/events": {
                "get": {
                    "summary": "The run's events (SSE, resumable with Last-Event-ID)",
                    "parameters": run_id,
                    "responses": {
                        "200": {"description": "text/event-stream of JSON events"},
                        "204": {"description": "the run ended before Last-Event-ID"},
                        "429": answer("too many event streams of this caller open", error),
                        **refusals,
                    },
                }
            },
            "/runs/{run_id}/cancel": {
                "post": {
                    "summary": "Cancel a run",
                    "parameters": run_id,
                    "requestBody": json_body,
                    "responses": {
                        "202": answer("cancelled"),
                        "409": answer("already ended", error),
                        **refusals,
                    },
                }
            },
            "/runs/{run_id}/reviews": {
                "get": {
                    "summary": "The run's pending reviews",
                    "parameters": run_id,
                    "responses": {"200": answer("pending reviews", {"type": "object"}), **refusals},
                }
            },
            "/reviews/{review_id}": {
                "post": {
                    "summary": "Decide a review",
                    "parameters": [
                        {
                            "name": "review_id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/Decision"}
                            }
                        },
                    },
                    "responses": {
                        "200": answer("applied", {"type": "object"}),
                        "400": answer("not a valid decision (nothing applied)", error),
                        "409": answer("already decided", error),
                        "410": answer("timed out or its run ended", error),
                        **refusals,
                    },
                }
            },
        },
    }


def run_api(
    ensembles: Mapping[str, EnsembleSource | Callable[[], Any]],
    *,
    token: str | Mapping[str, str] | None = None,
    durable: Any = None,
    allowed_hosts: list[str] | None = None,
    port: int | None = None,
    limits: Limits | None = None,
    run_limits: RunLimits | None = None,
    page: str | None = None,
) -> Any:
    """An ASGI app serving ``ensembles`` (name -> ensemble, or a factory called per run) as the
    run API (see the module docstring and docs/serve.md).

    ``token``: every request needs ``Authorization: Bearer <token>``; a mapping of callers'
    names to tokens gives each caller its own runs (without tokens a caller is its address).
    Requests must name a loopback ``Host`` (or one of ``allowed_hosts``); ``port``, when
    given, is the only port a browser page's ``Origin`` may carry. ``limits`` and
    ``run_limits`` bound requests, connections and kept runs. ``page``: an HTML page served at
    ``/`` without the token (it must hold no secret), so a front end shares the API's origin.

    ``durable``: a launched ``DurableRuntime`` in which every ensemble is registered under its
    name here; runs are then durable runs of it, kept across restarts of the API, and their
    reviews (``DurableReviewHandler``) are listed and decided through the API.
    """
    if not ensembles:
        raise ConfigurationError("run_api needs at least one ensemble: {name: ensemble}")
    for name in ensembles:
        check_name(name)
    served = _RunAPI(ensembles, durable, run_limits or RunLimits())
    for template in served.templates.values():
        check_setup(template)  # a refused setup fails now, not at the first run
    if durable is not None:
        from agentensemble.serve._durable_serving import check_registered

        check_registered(durable, list(served.sources))
    routes = [
        Route("/runs", served.submit, methods=["POST"]),
        Route("/runs/{run_id}", served.read, methods=["GET"]),
        Route("/runs/{run_id}/events", served.events, methods=["GET"]),
        Route("/runs/{run_id}/cancel", served.cancel, methods=["POST"]),
        Route("/runs/{run_id}/reviews", served.reviews, methods=["GET"]),
        Route("/reviews/{review_id:path}", served.decide, methods=["POST"]),
        Route("/openapi.json", served.openapi, methods=["GET"]),
    ]
    if page is not None:
        shown = HTMLResponse(page, headers=PAGE_HEADERS)
        routes.append(Route("/", lambda request: shown, methods=["GET"]))

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        yield
        await served.shutdown()

    app = Starlette(routes=routes, lifespan=lifespan)
    hosts = allowed_host_names("127.0.0.1", allowed_hosts or ())
    return Hardened(
        app,
        surface=SURFACE,
        allowed_hosts=hosts,
        port=port,
        token=token,
        open_paths=("/",) if page is not None else (),
        limits=limits or Limits(),
    )


__all__ = ["RunAPIReviewHandler", "RunLimits", "openapi_description", "run_api"]
