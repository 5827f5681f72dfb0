"""Delegation: an agent (or the hierarchical manager) hands a piece of work to another agent.

The delegated agent runs as itself — its own system prompt, tools and model — on the
instructions it was given, through a full ``AgentExecutor`` run (tool approvals and typed
output included). Two tools reach it: the manager's ``delegate_task`` and the peers'
``delegate_to_agent``; both take ``agent_role`` (an enum of the roles it may ask) and
``instructions``. A delegation that cannot happen or that fails reaches the asking model as a
tool error it can recover from; only ExitEarly and configuration errors stop the run.

A worker may also be remote (``Worker.remote``: an A2A agent put in ``Ensemble(agents=[...])``,
see ``agentensemble.serve.A2AAgent``): the instructions go to it as text and its answer is the
delegation's output; its failure is the delegation's failure, a tool error for the asker.

Peer hand-offs nest: A asks B is depth 1. ``max_delegation_depth`` of them are allowed; the
next one is refused with an error telling the model to do the work itself, which also cuts a
cycle (A asks B asks A ...). The depth travels in a context variable, so concurrent delegations
each count their own chain.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Literal, cast

from pydantic import BaseModel, Field, create_model, field_validator

from agentensemble.errors import ConfigurationError, ExitEarlyError, ToolExecutionError
from agentensemble.events import DelegationCompleted, DelegationFailed, DelegationStarted
from agentensemble.execution.agent_executor import AgentExecutor, AgentTask, ExecutionEnv
from agentensemble.logging import get_logger
from agentensemble.outputs import TaskOutput
from agentensemble.task_memory import TaskMemory
from agentensemble.tools.typed import TypedAgentTool

MANAGER_TOOL = "delegate_task"
PEER_TOOL = "delegate_to_agent"
DELEGATED_EXPECTED_OUTPUT = "A complete answer to the instructions, ready to hand back."

_depth: ContextVar[int] = ContextVar("agentensemble_delegation_depth", default=0)
_log = get_logger()


async def remember(memory: TaskMemory, description: str, output: str) -> None:
    """Keep a delegation's (or the manager's) output; a failed write loses only the memory."""
    try:
        await memory.remember(description, output)
    except Exception as error:
        _log.error("memory write failed", error=str(error))


@dataclass
class Worker:
    """An agent that can be delegated to, resolved for this run (templates filled)."""

    role: str
    goal: str
    agent_task: AgentTask
    """Its executor settings; description and expected output are set per delegation."""
    remote: Callable[[str], Awaitable[str]] | None = None
    """A remote worker: answers the instructions (text, already made safe for the model) or
    raises; its ``agent_task`` is then never run."""


class Team:
    """The agents of one run that can be asked for work, and the record of what they did."""

    def __init__(self, workers: Sequence[Worker], max_depth: int) -> None:
        self.workers = list(workers)
        self.max_depth = max_depth
        self.env: ExecutionEnv | None = None
        """Set by the facade when the run starts: events, review handler, metrics."""
        self.memory_for: Callable[..., TaskMemory | None] | None = None
        """Set by the hierarchical workflow when the run has memory: the memory of a manager's
        delegation to a role (shown to the worker before it, written after it)."""
        self._slots: list[TaskOutput | None] = []

    @property
    def roles(self) -> list[str]:
        return [worker.role for worker in self.workers]

    def find(self, role: str) -> Worker | None:
        wanted = role.strip().casefold()
        return next((w for w in self.workers if w.role.casefold() == wanted), None)

    @property
    def recorded(self) -> list[TaskOutput]:
        """Completed recorded delegations, in the order they were asked for."""
        return [output for output in self._slots if output is not None]

    async def delegate(
        self, from_role: str, to_role: str, instructions: str, *, manager: bool = False
    ) -> TaskOutput:
        """Run ``to_role`` on ``instructions``; ToolExecutionError (for the model) if it cannot.

        The manager's delegations are recorded (``recorded``) and do not count as depth.
        """
        env = self.env or ExecutionEnv()
        depth = _depth.get() if manager else _depth.get() + 1
        worker = self.find(to_role)
        problem = None
        if worker is None:
            problem = f"Unknown agent role {to_role!r}. Choose one of: {', '.join(self.roles)}"
        elif worker.role.casefold() == from_role.casefold():
            problem = "You cannot delegate to yourself; do this work yourself"
        elif not manager and depth > self.max_depth:
            problem = (
                f"Delegation depth limit ({self.max_depth}) reached: do this work yourself "
                "instead of delegating it"
            )
        if problem is not None or worker is None:
            env.emitter.emit(DelegationFailed(from_role, to_role, problem or "", depth))
            raise ToolExecutionError(problem)
        slot = len(self._slots) if manager else None
        if slot is not None:
            self._slots.append(None)  # reserved now: the record keeps the order asked
        env.emitter.emit(DelegationStarted(from_role, worker.role, instructions, depth))
        memory = self.memory_for(worker.role) if manager and self.memory_for else None
        task = replace(
            worker.agent_task,
            description=instructions,
            expected_output=DELEGATED_EXPECTED_OUTPUT,
            context=(),
            memory=memory,
        )
        token = _depth.set(depth)
        try:
            if worker.remote is None:
                output = await AgentExecutor(task, env).run()
            else:
                output = await _ask_remote(worker, worker.remote, instructions)
        except (ExitEarlyError, ConfigurationError) as error:
            env.emitter.emit(DelegationFailed(from_role, worker.role, str(error), depth))
            raise
        except Exception as error:
            message = f"{worker.role} could not finish: {type(error).__name__}: {error}"
            env.emitter.emit(DelegationFailed(from_role, worker.role, message, depth))
            raise ToolExecutionError(message) from error
        finally:
            _depth.reset(token)
        if memory is not None:
            await remember(memory, instructions, output.raw)
        if slot is not None:
            self._slots[slot] = output
        env.emitter.emit(DelegationCompleted(from_role, worker.role, output, depth))
        return output


async def _ask_remote(
    worker: Worker, remote: Callable[[str], Awaitable[str]], instructions: str
) -> TaskOutput:
    """A remote worker's answer as the delegation's output (no model or tool calls of ours)."""
    started = time.perf_counter()
    answer = await remote(instructions)
    return TaskOutput(
        raw=answer,
        task_description=instructions,
        agent_role=worker.role,
        duration=timedelta(seconds=time.perf_counter() - started),
    )


def _request_model(name: str, roles: Sequence[str]) -> type[BaseModel]:
    """``agent_role`` (an enum of ``roles``; case and spaces forgiven) and ``instructions``."""
    role_type: Any = cast(Any, Literal)[tuple(roles)]
    canonical = {role.strip().casefold(): role for role in roles}

    def forgiving(value: Any) -> Any:
        return canonical.get(value.strip().casefold(), value) if isinstance(value, str) else value

    return create_model(
        f"{name}_arguments",
        __validators__={"_role": field_validator("agent_role", mode="before")(forgiving)},
        agent_role=(role_type, Field(description="The role of the agent to hand the work to")),
        instructions=(
            str,
            Field(
                min_length=1,
                description="Everything the agent needs: the work, its context, what to return",
            ),
        ),
    )


class DelegateTool(TypedAgentTool[BaseModel]):
    """``delegate_task`` (the manager's) or ``delegate_to_agent`` (a peer's), for one asker.

    ``durable_itself``: in a durable run the delegated agent's model and tool calls are
    checkpointed one by one, not the delegation as one step, so a crash in the middle of a
    delegation redoes none of the worker's finished calls, and a resumed run still records the
    delegations made before the crash.
    """

    durable_itself = True

    def __init__(self, team: Team, from_role: str, *, manager: bool = False) -> None:
        self.team = team
        self.from_role = from_role
        self.manager = manager
        self.name = MANAGER_TOOL if manager else PEER_TOOL
        roles = [w for w in team.workers if w.role.casefold() != from_role.casefold()]
        self.roles = [w.role for w in roles]
        self.input_model = _request_model(self.name, self.roles)
        listing = "; ".join(f"{w.role}: {w.goal}" for w in roles)
        self.description = (
            f"Hand a piece of work to another agent, who does it and returns the answer. "
            f"Agents: {listing}"
        )

    def parameters_schema(self) -> dict[str, Any]:
        """The pydantic schema, with ``agent_role`` always an ``enum`` (one role too)."""
        schema = super().parameters_schema()
        role = schema["properties"]["agent_role"]
        role.pop("const", None)
        role["enum"] = list(self.roles)
        role.setdefault("type", "string")
        return schema

    async def ado_execute(self, input: BaseModel) -> str:
        request = cast(Any, input)
        output = await self.team.delegate(
            self.from_role, request.agent_role, request.instructions, manager=self.manager
        )
        return output.raw


__all__ = [
    "DELEGATED_EXPECTED_OUTPUT",
    "MANAGER_TOOL",
    "PEER_TOOL",
    "DelegateTool",
    "Team",
    "Worker",
]
