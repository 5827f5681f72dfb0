"""``a2a_app``: an ensemble as an A2A agent, built on the official ``a2a-sdk`` (extra ``[a2a]``).

The SDK serves the protocol (the agent card at ``/.well-known/agent-card.json``, the JSON-RPC
methods ``SendMessage``, ``SendStreamingMessage``, ``GetTask``, ``CancelTask`` at ``/``, task
storage); this module supplies the card (skills from the ensemble's tasks) and an
``AgentExecutor`` that runs one fresh run per task: ``working`` with a status update per task
event, the final output as an artifact (text, plus data when the last task is typed), then
``completed``; a failed run is ``failed`` with the redacted error text, bad input is
``rejected`` before any model call, a cancel request cancels the run (``canceled``).

Served through the one hardened setup (``_hardened.Hardened``: Host, Origin, JSON-only bodies,
size and shape bounds, the optional token). Every task belongs to the caller that created it
(the name of its token, else its address): ``GetTask`` and ``CancelTask`` find only the caller's
own tasks, ``ListTasks`` is not served, a caller runs at most ``max_running_per_caller`` tasks
and holds at most ``max_streams_per_caller`` streams open at once, and finished tasks are
dropped after ``finished_task_ttl`` seconds or once more than ``max_tasks`` (or
``max_task_bytes``) are kept, oldest first.

An ensemble with a memory store keeps each conversation: a task's context id (the one the
caller sent, else the one the SDK gave its first task) is its session, behind the caller's
identity (``_sessions``), so a caller continues its own conversation by sending the context id
again and never reaches another caller's.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from a2a.auth.user import User
from a2a.helpers.proto_helpers import (
    get_data_parts,
    new_data_part,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    ListTasksRequest,
    ListTasksResponse,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, PROTOCOL_VERSION_1_0
from a2a.utils.errors import InvalidRequestError, UnsupportedOperationError
from starlette.applications import Starlette
from starlette.requests import Request

from agentensemble._run import check_setup, execute
from agentensemble.ensemble import Ensemble
from agentensemble.errors import ConfigurationError
from agentensemble.logging import redact, redact_text
from agentensemble.serve._durable_serving import check_registered, run_durably
from agentensemble.serve._hardened import Hardened, Limits, declare_surface
from agentensemble.serve._http_guard import allowed_host_names
from agentensemble.serve._progress import ProgressPump
from agentensemble.serve._sessions import caller_session, takes_session
from agentensemble.serve._shape import (
    BadArguments,
    EnsembleSource,
    check_arguments,
    ensemble_of,
    error_text,
    input_kinds,
    step_summary,
    stopped,
    structured_result,
)
from agentensemble.workflows.step import step_kind, step_label

TEXT = "text/plain"
JSON = "application/json"
SURFACE = declare_surface("a2a", "an ensemble as an A2A agent (a2a_app, serve-a2a)")
_ADMITTED = "agentensemble_admitted"
"""``ServerCallContext.state`` key: this request holds a place in its caller's share."""
FINISHED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_REJECTED,
    }
)


@dataclass(frozen=True)
class TaskLimits:
    """How many tasks an A2A agent keeps and runs (see the module docstring)."""

    finished_task_ttl: float = 600.0
    max_tasks: int = 1000
    max_task_bytes: int = 64 * 1024 * 1024
    max_running_per_caller: int = 8
    max_streams_per_caller: int = 16
    """Streams (``SendStreamingMessage``, ``SubscribeToTask``) one caller holds open at once:
    each holds a connection, and one caller subscribing to its own task again and again held
    every connection of the server (503 for everyone else)."""


class _Caller(User):
    """The A2A SDK's view of a caller: the name the hardened guard gave it."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        return not self._name.startswith("address:")

    @property
    def user_name(self) -> str:
        return self._name


class _CallerContexts(DefaultServerCallContextBuilder):
    """Each request's context names its caller, so the task store scopes tasks to it."""

    def build_user(self, request: Request) -> User:
        return _Caller(str(request.scope.get("state", {}).get("caller", "")))


class OwnedTaskStore(InMemoryTaskStore):
    """The SDK's in-memory store (tasks kept per owner, ``resolve_user_scope``), with finished
    tasks expiring and the total bounded, oldest finished first."""

    def __init__(self, limits: TaskLimits) -> None:
        super().__init__()
        self.limits = limits
        # (owner, task id) -> (size in bytes, when it finished or None while running)
        self._kept: OrderedDict[tuple[str, str], tuple[int, float | None]] = OrderedDict()
        # owner -> requests admitted whose task is not saved yet (see ``admit``)
        self._admitted: dict[str, int] = {}

    def admit(self, context: ServerCallContext) -> None:
        """Count a request's task against its caller's share from now on (its first save
        takes the place over), or refuse it: checked and taken with no await in between, so
        requests arriving together cannot all pass before any task is saved."""
        owner = context.user.user_name
        most = self.limits.max_running_per_caller
        if self.running(owner) >= most:
            raise InvalidRequestError(
                message=f"you already run {most} tasks: wait for one to finish or cancel one"
            )
        self._admitted[owner] = self._admitted.get(owner, 0) + 1
        context.state[_ADMITTED] = True

    def release(self, context: ServerCallContext) -> None:
        """Give back a request's place if its task was never saved (refused, failed)."""
        if context.state.pop(_ADMITTED, False):
            owner = context.user.user_name
            left = self._admitted.get(owner, 1) - 1
            if left > 0:
                self._admitted[owner] = left
            else:
                self._admitted.pop(owner, None)

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await super().save(task, context)
        key = (context.user.user_name, task.id)
        if key not in self._kept:
            self.release(context)  # the task itself counts from now on
        finished = time.monotonic() if task.status.state in FINISHED else None
        self._kept[key] = (task.ByteSize(), finished)
        self._kept.move_to_end(key)
        await self._prune()

    def running(self, owner: str) -> int:
        """How many of ``owner``'s tasks have not finished (or are admitted, not yet saved)."""
        kept = sum(1 for (who, _), (_, done) in self._kept.items() if who == owner and not done)
        return kept + self._admitted.get(owner, 0)

    async def _prune(self) -> None:
        limits = self.limits
        now = time.monotonic()
        total = sum(size for size, _ in self._kept.values())
        for key, (size, done) in list(self._kept.items()):  # oldest first
            over = len(self._kept) > limits.max_tasks or total > limits.max_task_bytes
            if done is None or (not over and now - done < limits.finished_task_ttl):
                continue
            del self._kept[key]
            total -= size
            await super().delete(key[1], ServerCallContext(user=_Caller(key[0])))


class _OwnedRequests(DefaultRequestHandler):
    """The SDK's handler without ``ListTasks`` and with caps on each caller's running tasks
    and open streams."""

    def __init__(self, *, store: OwnedTaskStore, **settings: Any) -> None:
        super().__init__(task_store=store, **settings)
        self._owned = store
        self._streams: dict[str, int] = {}  # caller -> its streams open now

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        raise UnsupportedOperationError(
            message="ListTasks is not served: keep the id of each task you start"
        )

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Any:
        self._owned.admit(context)
        try:
            return await super().on_message_send(params, context)
        finally:
            self._owned.release(context)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Any:
        self._open_stream(context)
        try:
            self._owned.admit(context)
            try:
                async for event in super().on_message_send_stream(params, context):
                    yield event
            finally:
                self._owned.release(context)
        finally:
            self._close_stream(context)

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> Any:
        self._open_stream(context)
        try:
            async for event in super().on_subscribe_to_task(params, context):
                yield event
        finally:
            self._close_stream(context)

    def _open_stream(self, context: ServerCallContext) -> None:
        """Count a stream against its caller's share, or refuse it (no await in between)."""
        owner = context.user.user_name
        most = self._owned.limits.max_streams_per_caller
        if self._streams.get(owner, 0) >= most:
            raise InvalidRequestError(
                message=f"you already have {most} streams open: close one before opening another"
            )
        self._streams[owner] = self._streams.get(owner, 0) + 1

    def _close_stream(self, context: ServerCallContext) -> None:
        owner = context.user.user_name
        left = self._streams.pop(owner, 1) - 1
        if left:
            self._streams[owner] = left


def agent_card(ensemble: Ensemble, *, name: str, description: str, url: str) -> AgentCard:
    """The card: one JSON-RPC interface at ``url``, one skill per step (never a model name,
    a key or a tool's settings: nothing secret crosses; its texts pass the redaction policy,
    here and again as each request is served, ``shown_card``)."""
    from agentensemble import __version__

    skills = []
    for index, step in enumerate(ensemble.tasks, start=1):
        is_task = step_kind(step) == "task"
        produces = f" Produces: {step.expected_output}" if is_task else ""
        skills.append(
            AgentSkill(
                id=getattr(step, "name", None) or f"task-{index}",
                name=step_label(step),
                description=f"{step_summary(step)}{produces}",
                tags=["agentensemble", ensemble.workflow.value],
                input_modes=[TEXT, JSON],
                output_modes=[TEXT, JSON] if is_task and step.output_type is not None else [TEXT],
            )
        )
    return shown_card(
        AgentCard(
            name=name,
            description=description,
            version=__version__,
            supported_interfaces=[
                AgentInterface(
                    url=url, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION_1_0
                )
            ],
            capabilities=AgentCapabilities(streaming=True, push_notifications=False),
            default_input_modes=[TEXT, JSON],
            default_output_modes=[TEXT, JSON],
            skills=skills,
        )
    )


def shown_card(card: AgentCard) -> AgentCard:
    """A copy of ``card`` whose texts (its name and description, each skill's) pass the
    redaction policy: the card is served without a token, and a registered secret in a task's
    description or expected output reached anyone who asked."""
    shown = AgentCard()
    shown.CopyFrom(card)
    shown.name = redact_text(shown.name)
    shown.description = redact_text(shown.description)
    for skill in shown.skills:
        skill.name = redact_text(skill.name)
        skill.description = redact_text(skill.description)
    return shown


async def _shown_card(card: AgentCard) -> AgentCard:
    return shown_card(card)  # at each request: a secret registered after start is kept too


def message_inputs(variables: Mapping[str, str], context: RequestContext) -> dict[str, Any]:
    """A message's inputs (``variables``: each input's kind, ``input_kinds``): a data part
    holding ``{variable: text}`` (a list of texts for a ``for_each`` input), or plain text
    filling the one input of an ensemble that needs exactly one, a text."""
    message = context.message
    parts = list(message.parts) if message is not None else []
    data = [item for item in get_data_parts(parts) if isinstance(item, dict)]
    if data:
        merged: dict[str, Any] = {}
        for item in data:
            merged.update(item)
        return check_arguments(variables, merged)
    text = context.get_user_input()
    names = list(variables)
    if len(names) == 1 and variables[names[0]] == "text":
        return check_arguments(variables, {names[0]: text})
    if not names:
        return {}
    example = ", ".join(
        f'"{name}": ' + ('["...", "..."]' if variables[name] == "list" else '"..."')
        for name in names[:3]
    )
    count = f"{len(names)} inputs" if len(names) > 1 else "an input"
    lists = [name for name in names if variables[name] == "list"]
    kind = f" ({', '.join(lists)}: a list of texts)" if lists else ""
    raise BadArguments(
        f"this agent needs {count} ({', '.join(names)}){kind}: send a data part with an "
        f"object such as {{{example}}}"
    )


class EnsembleExecutor(AgentExecutor):
    """Runs the ensemble for one A2A task (see the module docstring)."""

    def __init__(
        self,
        source: EnsembleSource,
        variables: Mapping[str, str],
        *,
        durable: Any = None,
        durable_name: str = "",
        sessions: bool = False,
    ) -> None:
        self._source = source
        self._variables = variables
        self._durable = durable
        self._durable_name = durable_name
        self._sessions = sessions  # the task's context id is its caller's session

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            assert context.message is not None
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)

        def say(text: str) -> Any:
            return new_text_message(redact_text(text), context_id=task.context_id, task_id=task.id)

        try:
            inputs = message_inputs(self._variables, context)
            session = (
                caller_session(context.call_context.user.user_name, task.context_id)
                if self._sessions
                else None
            )
            ensemble = ensemble_of(self._source)
        except BadArguments as error:
            await updater.reject(say(str(error)))
            return
        except Exception as error:
            await updater.failed(say(f"the ensemble could not be built: {error_text(error)}"))
            return
        await updater.start_work(say(f"running {len(ensemble.tasks)} step(s)"))

        async def send(progress: float, total: float | None, line: str) -> None:
            await updater.update_status(TaskState.TASK_STATE_WORKING, say(line))

        pump = ProgressPump(send)
        try:
            if self._durable is None:
                output = await execute(ensemble, inputs, [pump], session=session)
            else:
                output = await run_durably(self._durable, self._durable_name, inputs, pump)
        except Exception as error:
            await pump.close()
            await updater.failed(say(error_text(error)))
            return
        except BaseException:  # cancelled: CancelTask, or the server shutting down
            pump.abandon()
            raise
        await pump.close()
        why = stopped(output)
        if why is not None:
            await updater.failed(say(why))
            return
        parts = [new_text_part(redact_text(output.raw), media_type=TEXT)]
        structured = structured_result(ensemble, output)
        if structured is not None:
            parts.append(new_data_part(redact(structured), media_type=JSON))
        await updater.add_artifact(parts, name="result", last_chunk=True)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.task_id is None or context.context_id is None:
            return
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel(new_text_message("canceled by the caller", task_id=context.task_id))


def a2a_app(
    ensemble: Ensemble | Any,
    *,
    name: str,
    description: str,
    url: str,
    token: str | Mapping[str, str] | None = None,
    allowed_hosts: list[str] | None = None,
    max_body_bytes: int | None = None,
    durable: Any = None,
    limits: Limits | None = None,
    task_limits: TaskLimits = TaskLimits(),
) -> Any:
    """An ASGI app serving ``ensemble`` (or a factory, called per task) as an A2A agent.

    ``url`` is the address clients use (it goes on the card). Requests whose ``Host`` is not
    ``url``'s host (or one of ``allowed_hosts``) are refused, and so are state changes from
    another site, bodies that are not JSON or over ``max_body_bytes`` (default: ``limits``'s,
    1 MiB); with ``token`` every
    request but the card's needs ``Authorization: Bearer <token>``. ``token`` may also map
    callers' names to their tokens: each caller then sees only its own tasks (without tokens,
    a caller is known by its address). ``limits`` and ``task_limits`` bound requests,
    connections and kept tasks (the defaults suit a local agent).

    ``durable``: a launched ``DurableRuntime`` in which the ensemble is registered under
    ``name``; each task is then a durable run of it (docs/durable.md), and ``CancelTask``
    cancels that run.
    """
    parsed = urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigurationError(f"a2a_app url must be an http(s) URL; got {url!r}")
    if not name.strip() or not description.strip():
        raise ConfigurationError("a2a_app needs a non-blank name and description")
    template = ensemble_of(ensemble)
    check_setup(template)  # a refused setup fails now, not at the first task
    if durable is not None:
        check_registered(durable, [name])
    card = agent_card(template, name=name, description=description, url=url)
    executor = EnsembleExecutor(
        ensemble,
        input_kinds(template),
        durable=durable,
        durable_name=name,
        sessions=takes_session(template, (), durable),
    )
    handler = _OwnedRequests(
        agent_executor=executor, store=OwnedTaskStore(task_limits), agent_card=card
    )
    path = parsed.path or "/"
    routes = [
        *create_agent_card_routes(card, card_modifier=_shown_card),
        *create_jsonrpc_routes(handler, rpc_url=path, context_builder=_CallerContexts()),
    ]
    app = Starlette(routes=routes)
    hosts = allowed_host_names(parsed.hostname, allowed_hosts or ())
    bounds = limits or Limits()
    if max_body_bytes is not None:
        bounds = replace(bounds, max_body_bytes=max_body_bytes)
    return Hardened(
        app,
        surface=SURFACE,
        allowed_hosts=hosts,
        port=parsed.port or (443 if parsed.scheme == "https" else 80),
        token=token,
        open_paths=(AGENT_CARD_WELL_KNOWN_PATH,),
        limits=bounds,
    )


__all__ = [
    "EnsembleExecutor",
    "OwnedTaskStore",
    "TaskLimits",
    "a2a_app",
    "agent_card",
    "message_inputs",
    "shown_card",
]
