"""``ag_ui_app``: an ensemble as an AG-UI agent, for front ends such as CopilotKit (extra
``[ag-ui]``, the maintained ``ag-ui-protocol`` package for the event types and encoding).

``POST /`` takes a ``RunAgentInput`` and answers with a server-sent event stream:
``RUN_STARTED``, a ``STATE_SNAPSHOT`` of the run (its tasks, their outputs so far, its reviews)
and ``STATE_DELTA`` patches as it changes, ``STEP_STARTED``/``STEP_FINISHED`` per task,
``TEXT_MESSAGE_START``/``CONTENT``/``END`` from the models' token deltas, ``TOOL_CALL_START``/
``ARGS``/``END`` and ``TOOL_CALL_RESULT`` per tool call, then ``RUN_FINISHED`` with the result
(the last task's text, or its typed value), or ``RUN_ERROR`` (redacted; code ``run_stopped``
when a reviewer stopped the run: no result leaves then).

Human review (``review: ag-ui`` / ``AGUIReviewHandler``): a gated tool call or a task review ends
the stream with ``RUN_FINISHED`` whose outcome is ``interrupt`` (AG-UI's interrupts); the run
waits. The front end answers with a new ``RunAgentInput`` on the same thread carrying
``resume`` entries, and the same run goes on streaming (``_ag_ui_review`` has the answers'
shape and rules). The inputs a run takes from the request are described in
``_ag_ui_inputs``. Runs are held as ``_ag_ui_runs`` says.

Served through the one hardened setup (``_hardened.Hardened``: Host, Origin, JSON-only bodies,
size and shape bounds, the optional token).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import ag_ui.core as ag
from ag_ui.encoder import EventEncoder

from agentensemble._run import check_setup
from agentensemble.ensemble import Ensemble
from agentensemble.errors import ConfigurationError
from agentensemble.logging import redact, redact_text
from agentensemble.serve._ag_ui_events import Translator
from agentensemble.serve._ag_ui_inputs import run_input, run_inputs
from agentensemble.serve._ag_ui_review import AGUIReviewHandler, decision
from agentensemble.serve._ag_ui_runs import AGUIRunLimits, HeldRun, Refused, Runs
from agentensemble.serve._durable_serving import check_registered
from agentensemble.serve._hardened import PARSED, Hardened, Limits, declare_surface
from agentensemble.serve._http_guard import Receive, Scope, Send, allowed_host_names, refuse
from agentensemble.serve._sessions import caller_session, takes_session
from agentensemble.serve._shape import (
    BadArguments,
    EnsembleSource,
    ensemble_of,
    error_text,
    input_kinds,
    stopped,
    structured_result,
)

SURFACE = declare_surface("ag-ui", "an ensemble as an AG-UI agent (ag_ui_app, serve-ag-ui)")
#: The most AG-UI events sent in one write (the items queued while the last write went out).
MAX_BATCH = 512
_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


class _Stream:
    """One HTTP response: AG-UI events as server-sent events, until the run finishes, fails,
    or waits for a review."""

    def __init__(self, run: HeldRun, given: Any, receive: Receive, send: Send) -> None:
        self.run = run
        self.given = given
        self.receive = receive
        self.send = send
        self.encoder = EventEncoder()
        self.translator = Translator(run.state, ag)

    async def emit(self, events: Iterable[Any]) -> None:
        body = "".join(self.encoder.encode(event) for event in events)
        if body:
            await self._write(body.encode())

    async def _write(self, body: bytes) -> None:
        await self.send({"type": "http.response.body", "body": body, "more_body": True})

    async def serve(self, opening: list[Any]) -> None:
        run = self.run
        await self.send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
        gone = asyncio.ensure_future(self._disconnected())
        finished = False
        try:
            await self.emit(
                [
                    ag.RunStartedEvent(thread_id=self.given.thread_id, run_id=self.given.run_id),
                    ag.StateSnapshotEvent(snapshot=run.state.snapshot()),
                    *self.translator.reopen(),
                    *opening,
                ]
            )
            if run.pending:  # a resume that left interrupts open: ask again at once
                await self.emit(self._interrupted())
                finished = True
            while not finished:
                item = await self._next(gone)
                if item is None:
                    return  # the client went away: ``finally`` cancels the run
                events, finished = self._handle(*item)
                while not finished and not run.queue.empty() and len(events) < MAX_BATCH:
                    more, finished = self._handle(*run.queue.get_nowait())
                    events += more
                await self.emit(events)  # what queued up meanwhile goes out in one write
        except OSError:  # the client went away while we wrote
            pass
        finally:
            gone.cancel()
            run.attached = False
            if not finished:
                run.cancel()
            with contextlib.suppress(OSError):
                await self.send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _disconnected(self) -> None:
        while (await self.receive())["type"] != "http.disconnect":
            pass

    async def _next(self, gone: asyncio.Future[Any]) -> tuple[str, Any] | None:
        queue = self.run.queue
        while True:
            if not queue.empty():
                return queue.get_nowait()
            getting: asyncio.Future[tuple[str, Any]] = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait(
                {getting, gone},
                timeout=self.run.limits.keepalive_seconds,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if getting in done:
                return getting.result()
            getting.cancel()
            if gone in done:
                return None
            await self._write(b": keep-alive\n\n")

    def _handle(self, kind: str, value: Any) -> tuple[list[Any], bool]:
        """The AG-UI events one queued item means, and whether the stream is over."""
        if kind == "event":
            return self.translator.translate(value), False
        if kind == "interrupt":
            if value.id not in self.run.pending:
                return [], False  # answered (or timed out) before this stream reached it
            return self._interrupted(), True
        state = self.run.state
        closing = self.translator.close_all()
        if kind == "done":
            why = stopped(value)
            if why is not None:
                ops = state.set_status("stopped")
                return [*closing, *self.translator.delta(ops), _error(why, "run_stopped")], True
            ops = state.set_status("completed")
            finished = ag.RunFinishedEvent(
                thread_id=self.given.thread_id,
                run_id=self.given.run_id,
                result=_result(self.run.ensemble, value),
            )
            return [*closing, *self.translator.delta(ops), finished], True
        ops = state.set_status("failed")
        code = "cancelled" if isinstance(value, asyncio.CancelledError) else type(value).__name__
        return [*closing, *self.translator.delta(ops), _error(error_text(value), code)], True

    def _interrupted(self) -> list[Any]:
        """The end of the stream at the run's open reviews: ``RUN_FINISHED``, interrupts."""
        run = self.run
        known = {review["id"] for review in run.state.reviews}
        ops: list[Any] = []
        for pending in run.pending.values():
            if pending.id not in known:
                ops += run.state.review_added(pending.view())
        ops += run.state.set_status("waiting for review")
        outcome = ag.RunFinishedInterruptOutcome(
            interrupts=[pending.interrupt(ag) for pending in run.pending.values()]
        )
        return [
            *self.translator.close_all(),
            *self.translator.delta(ops),
            ag.RunFinishedEvent(
                thread_id=self.given.thread_id, run_id=self.given.run_id, outcome=outcome
            ),
        ]


def _error(message: str, code: str) -> Any:
    return ag.RunErrorEvent(message=redact_text(message), code=code)


def _result(ensemble: Ensemble, output: Any) -> Any:
    structured = structured_result(ensemble, output)
    return redact(structured) if structured is not None else redact_text(output.raw)


class _AGUIApp:
    """The ASGI app inside ``Hardened``: ``POST /`` only."""

    def __init__(
        self,
        source: EnsembleSource,
        kinds: Mapping[str, str],
        sessions: bool,
        runs: Runs,
        durable: tuple[Any, str] | None,
    ) -> None:
        self.source = source
        self.kinds = kinds
        self.sessions = sessions
        self.runs = runs
        self.durable = durable

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope.get("path") != "/":
            await refuse(send, 404, "not found: POST a RunAgentInput to /")
            return
        if scope.get("method") != "POST":
            await refuse(send, 405, "POST a RunAgentInput (JSON) to / for an event stream")
            return
        state = scope.get("state", {})
        caller = str(state.get("caller", ""))
        try:
            given = run_input(state.get(PARSED))
            if given.resume:
                run, opening = self._resume(caller, given)
            else:
                run, opening = self._start(caller, given), []
        except BadArguments as error:
            await refuse(send, 422, redact_text(str(error)))
            return
        except Refused as error:
            await refuse(send, error.status, str(error))
            return
        run.attached = True
        await _Stream(run, given, receive, send).serve(opening)

    def _start(self, caller: str, given: Any) -> HeldRun:
        inputs = run_inputs(self.kinds, given)  # bad input fails before any run is held
        session = caller_session(caller, given.thread_id) if self.sessions else None
        try:
            ensemble = ensemble_of(self.source)
        except Exception as error:
            raise Refused(500, f"the ensemble could not be built: {error_text(error)}") from None
        run = self.runs.new(caller, given.thread_id)
        run.start(ensemble, inputs, session, self.runs, self.durable)
        return run

    def _resume(self, caller: str, given: Any) -> tuple[HeldRun, list[Any]]:
        """Apply the resume entries (all, or none when one cannot be applied)."""
        run = self.runs.waiting(caller, given.thread_id)
        decisions: dict[str, Any] = {}
        for entry in given.resume:
            interrupt_id = entry.interrupt_id
            named = repr(interrupt_id[:100])  # a client's id: echoed bounded
            if interrupt_id in decisions:
                raise BadArguments(f"resume answers interrupt {named} twice")
            pending = run.pending.get(interrupt_id)
            if pending is None:
                why = run.closed.get(interrupt_id)
                if why is not None:
                    raise Refused(410, f"interrupt {named} is closed: {why}")
                raise BadArguments(f"no open interrupt {named} in this thread's run")
            decisions[interrupt_id] = decision(pending, entry, caller or "local")
        ops = run.decide(decisions)
        ops += run.state.set_status("running")
        return run, [ag.StateDeltaEvent(delta=ops)]

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.runs.close()
                await send({"type": "lifespan.shutdown.complete"})
                return


def ag_ui_app(
    ensemble: EnsembleSource,
    *,
    token: str | Mapping[str, str] | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    allowed_hosts: Iterable[str] = (),
    max_body_bytes: int | None = None,
    limits: Limits | None = None,
    run_limits: AGUIRunLimits | None = None,
    durable: Any = None,
    name: str = "",
) -> Any:
    """An ASGI app serving ``ensemble`` (or a factory, called per run) as an AG-UI agent at
    ``POST /`` (see the module docstring).

    ``host`` is the bound address: its names (and ``allowed_hosts``) are the ``Host`` values
    accepted, and ``port`` the one a browser's ``Origin`` must name. With ``token`` every
    request needs ``Authorization: Bearer <token>``; ``token`` may map callers' names to their
    tokens (each caller then resumes only its own runs). ``limits`` bounds requests and
    connections, ``run_limits`` the runs held.

    ``durable``: a launched ``DurableRuntime`` in which the ensemble is registered under
    ``name``; each run is then a durable run of it (docs/durable.md). Its reviews wait in the
    durable run, not in this server, so ``review: ag-ui`` is refused there: use a durable
    review channel (a webhook, the web console).
    """
    template = ensemble_of(ensemble)
    check_setup(template)  # a refused setup fails now, not at the first run
    if durable is not None:
        if isinstance(template.review_handler, AGUIReviewHandler):
            raise ConfigurationError(
                "review: ag-ui cannot answer a durable run's reviews (they wait in the durable "
                "run, not in this server): use a webhook or the web console reviewer"
            )
        check_registered(durable, [name])
    kinds = input_kinds(template)
    bounds = limits or Limits()
    if max_body_bytes is not None:
        bounds = replace(bounds, max_body_bytes=max_body_bytes)
    runs = Runs(run_limits or AGUIRunLimits())
    sessions = takes_session(template, kinds, durable)
    app = _AGUIApp(ensemble, kinds, sessions, runs, None if durable is None else (durable, name))
    return Hardened(
        app,
        surface=SURFACE,
        allowed_hosts=allowed_host_names(host, allowed_hosts),
        port=port,
        token=token,
        limits=bounds,
    )


__all__ = ["AGUIReviewHandler", "AGUIRunLimits", "ag_ui_app"]
