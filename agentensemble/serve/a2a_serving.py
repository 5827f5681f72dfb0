"""``a2a_app``: an ensemble as an A2A agent, built on the official ``a2a-sdk`` (extra ``[a2a]``).

The SDK serves the protocol (the agent card at ``/.well-known/agent-card.json``, the JSON-RPC
methods ``SendMessage``, ``SendStreamingMessage``, ``GetTask``, ``CancelTask`` at ``/``, task
storage); this module supplies the card (skills from the ensemble's tasks) and an
``AgentExecutor`` that runs one fresh run per task: ``working`` with a status update per task
event, the final output as an artifact (text, plus data when the last task is typed), then
``completed``; a failed run is ``failed`` with the redacted error text, bad input is
``rejected`` before any model call, a cancel request cancels the run (``canceled``). An
``HTTPGuard`` refuses foreign ``Host`` headers, bounds bodies and checks the optional token.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from a2a.helpers.proto_helpers import (
    get_data_parts,
    new_data_part,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    TaskState,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, PROTOCOL_VERSION_1_0
from starlette.applications import Starlette

from agentensemble._run import check_setup, execute
from agentensemble.ensemble import Ensemble
from agentensemble.errors import ConfigurationError
from agentensemble.logging import redact, redact_text
from agentensemble.serve._durable_serving import check_registered, run_durably
from agentensemble.serve._http_guard import MAX_BODY_BYTES, HTTPGuard, allowed_host_names
from agentensemble.serve._progress import ProgressPump
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


def agent_card(ensemble: Ensemble, *, name: str, description: str, url: str) -> AgentCard:
    """The card: one JSON-RPC interface at ``url``, one skill per step (never a model name,
    a key or a tool's settings: nothing secret crosses)."""
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
    return AgentCard(
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
    ) -> None:
        self._source = source
        self._variables = variables
        self._durable = durable
        self._durable_name = durable_name

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
                output = await execute(ensemble, inputs, [pump])
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
    token: str | None = None,
    allowed_hosts: list[str] | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    durable: Any = None,
) -> Any:
    """An ASGI app serving ``ensemble`` (or a factory, called per task) as an A2A agent.

    ``url`` is the address clients use (it goes on the card). Requests whose ``Host`` is not
    ``url``'s host (or one of ``allowed_hosts``) are refused, bodies over ``max_body_bytes``
    too; with ``token`` every request but the card's needs ``Authorization: Bearer <token>``.

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
    executor = EnsembleExecutor(ensemble, input_kinds(template), durable=durable, durable_name=name)
    handler = DefaultRequestHandler(
        agent_executor=executor,
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    path = parsed.path or "/"
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url=path)]
    app = Starlette(routes=routes)
    hosts = allowed_host_names(parsed.hostname, allowed_hosts or ())
    return HTTPGuard(
        app,
        allowed_hosts=hosts,
        token=token,
        max_body_bytes=max_body_bytes,
        open_paths=(AGENT_CARD_WELL_KNOWN_PATH,),
    )


__all__ = ["EnsembleExecutor", "a2a_app", "agent_card", "message_inputs"]
