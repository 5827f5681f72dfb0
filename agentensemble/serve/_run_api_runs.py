"""The run API's runs: who owns each, its state, its bounded event buffer and its reviews.

A run belongs to the caller that submitted it (its token's name, else its address): every read,
cancel and decision checks that, and a run of another caller is answered as unknown (404, so
run ids cannot be probed). Each run keeps its last ``max_events_per_run`` events (and at most
``max_event_bytes_per_run`` of them), numbered, so an event stream resumes after the last id its
client saw. Finished runs expire after ``finished_run_ttl`` seconds, and the oldest finished go
first once more than ``max_runs`` (or ``max_kept_bytes`` of them) are kept; a caller has at
most ``max_running_per_caller`` runs in flight and ``max_streams_per_caller`` event streams open.

Everything here runs on the server's event loop; events a tool's worker thread emits are handed
to it first.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from agentensemble.errors import UntrustedInputError
from agentensemble.outputs import EnsembleOutput
from agentensemble.redaction import drop_hidden, redact, redact_text
from agentensemble.serve._shape import MAX_ARGUMENT_CHARS, error_text, stopped, structured_result
from agentensemble.untrusted import parse_json

STATES = ("queued", "running", "waiting_review", "succeeded", "failed", "cancelled")
FINISHED = frozenset({"succeeded", "failed", "cancelled"})
MAX_TEXT = 20_000
MAX_ITEMS = 200
MAX_DEPTH = 6
DECISIONS = {"approve": "continue", "edit": "edit", "reject": "exit_early"}


@dataclass(frozen=True)
class RunLimits:
    """How many runs the run API keeps and runs (see the module docstring)."""

    finished_run_ttl: float = 600.0
    max_runs: int = 1000
    max_running_per_caller: int = 8
    max_events_per_run: int = 2000
    max_pending_reviews: int = 200
    keepalive_seconds: float = 15.0
    max_streams_per_caller: int = 16
    """Event streams one caller holds open at once (each holds a connection of the server's
    ``Limits.max_connections``, so one caller could otherwise take them all)."""
    max_event_bytes_per_run: int = 4 * 1024 * 1024
    """The bytes of events one run keeps (the oldest dropped past it, as past
    ``max_events_per_run``): 2,000 events of tool calls can hold megabytes."""
    max_kept_bytes: int = 64 * 1024 * 1024
    """The bytes of every run kept (events and outputs): past it the oldest finished go first."""


class Refused(Exception):
    """A request the run API cannot honour: its status and a message naming why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def wire_value(value: Any, depth: int = 0) -> Any:
    """A JSON-ready copy of ``value``: redacted by the policy, each text, list and depth
    bounded, so an event can neither leak a key nor carry megabytes."""
    if isinstance(value, str):
        text = redact_text(value)
        return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + " ...[truncated]"
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Enum):
        return wire_value(value.value, depth)
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, BaseException):
        return error_text(value)
    if depth >= MAX_DEPTH:
        return wire_value(repr(value)[:500])
    if hasattr(value, "model_dump"):
        try:
            return wire_value(value.model_dump(mode="json", exclude={"trace"}), depth + 1)
        except Exception:  # a field pydantic cannot dump: its text
            return wire_value(repr(value)[:500])
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: wire_value(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)
        }
    if isinstance(value, Mapping):
        items = list(value.items())[:MAX_ITEMS]
        return {
            redact_text(str(k))[:200]: wire_value(redact(v, str(k)), depth + 1) for k, v in items
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [wire_value(v, depth + 1) for v in list(value)[:MAX_ITEMS]]
    return wire_value(repr(value)[:500])


def event_json(event: Any) -> dict[str, Any]:
    """One run event as the stream sends it: ``{"type": <class name>, <its fields>}``; the final
    output shrinks to its summary (the tasks came as their own events), prompts are left out
    (a front end shows answers, not the conversation sent to the model)."""
    data: dict[str, Any] = {"type": type(event).__name__}
    if not dataclasses.is_dataclass(event):
        return data
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if f.name == "messages":
            continue
        if isinstance(value, EnsembleOutput):
            data[f.name] = {"raw": wire_value(value.raw), "exit_reason": value.exit_reason.value}
        else:
            data[f.name] = wire_value(value, 1)
    return data


def request_view(request: Any) -> Any:
    """A review's request as its reviewer reads it: every text without the characters that hide
    or reorder what is shown (``redaction.drop_hidden``: a bidi override in a tool's arguments
    would show the reviewer another address than the one the call uses), then redacted and
    bounded (``wire_value``), as every review channel shows it (``_ag_ui_review.shown``)."""
    return wire_value(_hidden_dropped(request))


def _hidden_dropped(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return drop_hidden(value)
    if depth >= MAX_DEPTH:
        return value  # wire_value shows it as bounded text
    if isinstance(value, Mapping):
        return {k: _hidden_dropped(v, depth + 1) for k, v in list(value.items())[:MAX_ITEMS]}
    if isinstance(value, list | tuple):
        return [_hidden_dropped(v, depth + 1) for v in list(value)[:MAX_ITEMS]]
    return value


def output_view(ensemble: Any, output: EnsembleOutput) -> dict[str, Any]:
    """What a caller reads of a finished run's output (redacted)."""
    return {
        "raw": wire_value(output.raw),
        "structured": redact(structured_result(ensemble, output)) if ensemble else None,
        "tasks": [
            {"task": wire_value(o.task_name or o.task_description[:200]), "raw": wire_value(o.raw)}
            for o in output.task_outputs
        ],
    }


def usage_view(output: EnsembleOutput) -> dict[str, Any]:
    return {"tokens": wire_value(output.usage), "cost_usd": output.cost_usd}


@dataclass
class Review:
    """One review asked in a run: the request as shown, and once taken its decision."""

    id: str
    run_id: str
    request: dict[str, Any]
    deadline: float | None
    answer: asyncio.Future[Any] | None = None
    state: str = "pending"  # pending, decided, timed_out
    decision: dict[str, Any] | None = None

    def view(self) -> dict[str, Any]:
        return {
            "review_id": self.id,
            "run_id": self.run_id,
            "state": self.state,
            "request": self.request,
            "deadline": self.deadline,
            "decision": self.decision,
        }


@dataclass
class RunRecord:
    """One run as the API holds it while it runs (and a while after)."""

    id: str
    ensemble: str
    owner: str
    limits: RunLimits
    loop: asyncio.AbstractEventLoop
    thread: int = field(default_factory=threading.get_ident)  # the loop's (made on it)
    state: str = "queued"
    created_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    output: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    error: str | None = None
    exit_reason: str | None = None
    task: asyncio.Task[Any] | None = None
    reviews: dict[str, Review] = field(default_factory=dict)
    events: deque[tuple[int, str]] = field(default_factory=deque)
    next_id: int = 1
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    book: RunBook | None = None
    """The book holding this run: it indexes the run's reviews and learns when it ends."""
    built: Any = None
    """The ensemble this run runs (plain mode): its tools check a reviewer's edit."""
    event_bytes: int = 0
    """The bytes of the events kept."""
    output_bytes: int = 0
    """The bytes of the output kept (once finished)."""

    # -- events ---------------------------------------------------------------------------

    def on_event(self, event: Any) -> None:
        """Listener: a run event joins the buffer (from any thread)."""
        if self.loop.is_closed():
            return
        if threading.get_ident() == self.thread:
            self.publish(event_json(event))
        else:
            self.loop.call_soon_threadsafe(self.publish, event_json(event))

    def publish(self, data: dict[str, Any]) -> None:
        """Number and keep one event (the oldest dropped past the bound); wake the streams."""
        text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
        self.events.append((self.next_id, text))
        self.event_bytes += len(text)
        self.next_id += 1
        limits = self.limits
        while len(self.events) > 1 and (
            len(self.events) > limits.max_events_per_run
            or self.event_bytes > limits.max_event_bytes_per_run
        ):
            self.event_bytes -= len(self.events.popleft()[1])
        self.wake.set()
        self.wake = asyncio.Event()

    def since(self, last: int) -> list[tuple[int, str]]:
        """The kept events after id ``last`` (ids are consecutive: found by position)."""
        if not self.events or last >= self.next_id - 1:
            return []
        start = max(0, last + 1 - self.events[0][0])
        return list(itertools.islice(self.events, start, None))

    def set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.publish({"type": "RunState", "state": state})

    # -- reviews --------------------------------------------------------------------------

    async def ask(self, request: Any) -> Any:
        """A review of this run (``RunAPIReviewHandler``): held until its caller decides it or
        its timeout applies ``on_timeout``; never approval by default."""
        from agentensemble_review import apply_on_timeout, decision_from_json
        from agentensemble_review.protocol import request_to_json

        seconds = request.timeout_seconds
        review = Review(
            id=secrets.token_urlsafe(16),
            run_id=self.id,
            request=request_view(request_to_json(request)),
            deadline=None if seconds is None else time.time() + seconds,
            answer=self.loop.create_future(),
        )
        self.reviews[review.id] = review
        if self.book is not None:
            self.book.index(self, review)
        self.publish({"type": "ReviewPending", "review": review.view()})
        self.set_state("waiting_review")
        try:
            assert review.answer is not None
            decided = await asyncio.wait_for(asyncio.shield(review.answer), seconds)
        except asyncio.TimeoutError:
            review.state = "timed_out"
            self.publish({"type": "ReviewTimedOut", "review": review.view()})
            return apply_on_timeout(request)
        finally:
            if self.state == "waiting_review" and not self.pending():
                self.set_state("running")
        # the caller who decided goes with the decision: the ReviewDecided event and the trace
        who = (review.decision or {}).get("decided_by")
        return decision_from_json(decided).model_copy(update={"decided_by": who or None})

    def pending(self) -> list[Review]:
        return [review for review in self.reviews.values() if review.state == "pending"]

    def decide(self, review: Review, decision: dict[str, Any], decided_by: str) -> dict[str, Any]:
        """Apply a checked decision (protocol JSON) to a pending review, once."""
        if review.state != "pending" or review.answer is None or review.answer.done():
            raise Refused(409 if review.state == "decided" else 410, closed_text(review.state))
        record = {**decision, "review_id": review.id, "decided_by": decided_by, "at": time.time()}
        review.state = "decided"
        review.decision = record
        self.decisions.append(record)
        review.answer.set_result(decision)
        self.publish({"type": "ReviewDecidedBy", "review": review.view()})
        return record

    # -- the end --------------------------------------------------------------------------

    def finish(self, state: str, *, error: str | None = None) -> None:
        self.error = error
        self.finished_at = time.time()
        for review in self.pending():  # nobody waits for them any more
            review.state = "timed_out"
        self.set_state(state)
        if self.book is not None:
            self.book.ended(self)

    def complete(self, ensemble: Any, output: EnsembleOutput) -> None:
        self.usage = usage_view(output)
        self.exit_reason = output.exit_reason.value
        why = stopped(output)
        if why is not None:  # a reviewer said stop: the unapproved output stays in
            self.finish("failed", error=why)
            return
        self.output = output_view(ensemble, output)
        self.output_bytes = len(json.dumps(self.output, ensure_ascii=True))
        self.finish("succeeded")

    def size(self) -> int:
        """The bytes this run holds (its events and output), for the book's bound."""
        return self.event_bytes + self.output_bytes

    def view(self) -> dict[str, Any]:
        return {
            "run_id": self.id,
            "ensemble": self.ensemble,
            "state": self.state,
            "created_at": self.created_at,
            "finished_at": self.finished_at,
            "outputs": self.output,
            "error": self.error,
            "exit_reason": self.exit_reason,
            "usage": self.usage,
            "pending_reviews": [review.id for review in self.pending()],
            "decisions": self.decisions,
        }


def closed_text(state: str) -> str:
    if state == "decided":
        return "this review was already decided: the first decision applies"
    return "this review is no longer pending (it timed out, or its run ended): nothing applied"


def checked_decision(body: Any, tool: Any = None) -> dict[str, Any]:
    """A caller's decision (``approve``, ``edit`` with ``revised_output`` or, for a tool call,
    ``arguments``, ``reject`` with an optional ``reason``) as the review protocol's JSON, checked
    by the same parser every review channel uses; ``Refused(400)`` naming what is wrong.
    ``tool``: the tool a tool-call review is about (its edited arguments are validated)."""
    from agentensemble_review import ReviewProtocolError, decision_from_json, decision_to_json

    if not isinstance(body, dict):
        raise Refused(400, 'the body must be a JSON object such as {"decision": "approve"}')
    unknown = sorted(set(body) - {"decision", "revised_output", "arguments", "reason"})
    if unknown:
        raise Refused(400, f"unknown field(s) {', '.join(map(repr, unknown))[:200]}")
    kind = body.get("decision")
    if kind not in DECISIONS:
        raise Refused(400, f"decision must be one of {', '.join(DECISIONS)}; got {kind!r:.80}")
    wanted: dict[str, Any] = {"decision": DECISIONS[kind]}
    if kind == "edit":
        if "arguments" in body:
            if not isinstance(body["arguments"], dict):
                raise Refused(400, "'arguments' must be a JSON object (the tool's arguments)")
            wanted["revised_output"] = json.dumps(body["arguments"], ensure_ascii=False)
        else:
            wanted["revised_output"] = body.get("revised_output")
    if kind == "reject" and body.get("reason") is not None:
        wanted["reason"] = body["reason"]
    try:
        decision = decision_to_json(decision_from_json(wanted))
    except ReviewProtocolError as error:
        raise Refused(400, str(error)) from None
    for name in ("revised_output", "reason"):  # bounded as every text a caller gives a run
        size = len(decision.get(name) or "")
        if size > MAX_ARGUMENT_CHARS:
            edited_arguments = name == "revised_output" and "arguments" in body
            what = "'arguments' (as JSON)" if edited_arguments else repr(name)
            raise Refused(400, f"{what} is {size} characters; the limit is {MAX_ARGUMENT_CHARS}")
    if decision["decision"] == "edit" and tool is not None:
        check_tool_edit(tool, decision["revised_output"])
    return decision


def check_tool_edit(tool: Any, revised: str) -> None:
    """Edited arguments of a tool call: a JSON object the tool's own schema accepts."""
    from agentensemble.errors import ToolArgumentsError
    from agentensemble.tools.schema import validate_arguments

    if not tool.takes_arguments:
        return  # a tool of one text input: any text is an input
    try:
        value = parse_json(revised, what="the edited tool arguments")
    except UntrustedInputError as error:
        raise Refused(400, str(error)) from None
    if not isinstance(value, dict):
        raise Refused(400, "the edited tool arguments must be a JSON object")
    model = input_model(tool.tool)
    if model is not None:
        try:
            validate_arguments(model, revised, tool.name)
        except ToolArgumentsError as error:
            raise Refused(400, str(error)) from None
        return
    schema = tool.parameters
    missing = [name for name in schema.get("required", []) if name not in value]
    extra = (
        sorted(set(value) - set(schema.get("properties", {})))
        if schema.get("additionalProperties") is False
        else []
    )
    if missing or extra:
        raise Refused(
            400,
            f"the edited arguments of {tool.name!r} do not fit its schema: "
            + "; ".join(
                part
                for part in (
                    f"missing {', '.join(missing)}" if missing else "",
                    f"unknown {', '.join(extra)}" if extra else "",
                )
                if part
            ),
        )


def input_model(tool: Any) -> Any:
    """The pydantic model a tool validates its arguments with (``@tool`` functions and
    ``TypedAgentTool``), or None."""
    definition = getattr(tool, "definition", None)
    schema = getattr(definition, "schema", None)
    model = getattr(schema, "model", None) or getattr(tool, "input_model", None)
    return model if isinstance(model, type) else None


def find_tool(ensemble: Any, name: str | None) -> Any:
    """The resolved tool called ``name`` among the ensemble's tasks' tools, or None."""
    if not name or ensemble is None:
        return None
    from agentensemble.workflows.prepare import resolve_tools
    from agentensemble.workflows.step import leaf_tasks

    try:
        resolved = resolve_tools(
            leaf_tasks(ensemble.tasks), ensemble.review_handler, ensemble.review_policy
        )
    except Exception:
        return None
    for tools in resolved.values():
        for tool in getattr(tools, "tools", ()):
            if tool.name == name:
                return tool
    return None


class RunBook:
    """Every run the API holds, and every review of them, by id (see the module docstring)."""

    def __init__(self, limits: RunLimits) -> None:
        self.limits = limits
        self.runs: dict[str, RunRecord] = {}
        self.finished: OrderedDict[str, float] = OrderedDict()  # run id -> when, oldest first
        self.reviews: dict[str, RunRecord] = {}

    def running(self, owner: str) -> int:
        return sum(1 for r in self.runs.values() if r.owner == owner and r.state not in FINISHED)

    def add(self, ensemble: str, owner: str, run_id: str | None = None) -> RunRecord:
        """A new run of ``owner``'s, if its bounds allow (429 otherwise)."""
        self.prune(room=1)
        most = self.limits.max_running_per_caller
        if self.running(owner) >= most:
            raise Refused(429, f"you already run {most} runs: wait for one or cancel one")
        if len(self.runs) >= self.limits.max_runs:
            raise Refused(503, "the server holds as many runs as it may: try again later")
        record = RunRecord(
            id=run_id or secrets.token_hex(16),
            ensemble=ensemble,
            owner=owner,
            limits=self.limits,
            loop=asyncio.get_running_loop(),
        )
        record.book = self
        self.runs[record.id] = record
        return record

    def index(self, record: RunRecord, review: Review) -> None:
        """Find ``review`` by its id from now on (reviews no longer pending forgotten first)."""
        if len(self.reviews) >= self.limits.max_pending_reviews:
            # forget reviews no longer pending first; the run's own list keeps them
            for key, owner in list(self.reviews.items()):
                if owner.reviews.get(key) is None or owner.reviews[key].state != "pending":
                    del self.reviews[key]
        self.reviews[review.id] = record

    def get(self, run_id: str, caller: str) -> RunRecord | None:
        """The caller's run ``run_id`` (None for an unknown run or another caller's)."""
        self.prune()
        record = self.runs.get(run_id)
        if record is None or not secrets.compare_digest(record.owner, caller):
            return None
        return record

    def review(self, review_id: str, caller: str) -> tuple[RunRecord, Review] | None:
        record = self.reviews.get(review_id)
        if record is None or not secrets.compare_digest(record.owner, caller):
            return None
        return record, record.reviews[review_id]

    def ended(self, record: RunRecord) -> None:
        self.finished[record.id] = record.finished_at or time.time()

    def prune(self, room: int = 0) -> None:
        """Drop expired finished runs, and the oldest finished while over the bounds (count, with
        ``room`` for runs about to be added, and bytes); the oldest finished first, so it stops
        at the first one kept."""
        now = time.time()
        limits = self.limits
        kept = sum(record.size() for record in self.runs.values()) if self.finished else 0
        while self.finished:
            run_id, done = next(iter(self.finished.items()))
            over = len(self.runs) + room > limits.max_runs or kept > limits.max_kept_bytes
            if not over and now - done < limits.finished_run_ttl:
                return
            del self.finished[run_id]
            record = self.runs.pop(run_id, None)
            if record is not None:
                kept -= record.size()
            for review_id in record.reviews if record is not None else ():
                self.reviews.pop(review_id, None)


__all__ = [
    "FINISHED",
    "STATES",
    "Refused",
    "Review",
    "RunBook",
    "RunLimits",
    "RunRecord",
    "checked_decision",
    "event_json",
    "find_tool",
    "output_view",
    "request_view",
    "usage_view",
    "wire_value",
]
