"""The hierarchical workflow: a manager agent plans the tasks and delegates them to workers.

The manager is an agent like any other (role "Manager", model ``manager_llm`` or the
ensemble's ``llm``) whose one tool is ``delegate_task(agent_role, instructions)``. It may
delegate any number of times (each tool call counts towards ``manager_max_iterations``), then
writes the final answer: the run's ``raw``. Every delegation runs the worker's full agent
execution and is recorded, in the order asked, as a TaskOutput in ``task_outputs``. A
delegation to an unknown role or one that fails reaches the manager as a tool error it can
recover from. The review after the last task (task ``review`` or ``review_policy``) reviews the
final answer.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from agentensemble._memory_wiring import team_memory
from agentensemble.attachments import distinct
from agentensemble.errors import ExitEarlyError, TaskExecutionError
from agentensemble.events import TaskCompleted, TaskFailed, TaskStarted
from agentensemble.execution.agent_executor import AgentExecutor, AgentTask, ExecutionEnv
from agentensemble.llm.types import ChatModel
from agentensemble.logging import get_logger
from agentensemble.outputs import EnsembleOutput, ExitReason, TaskOutput
from agentensemble.templates import task_attachments
from agentensemble.tools.resolver import ToolResolver
from agentensemble.workflows._review_gates import ask_reviewer, is_enabled
from agentensemble.workflows.base import PreparedRun, PreparedTask
from agentensemble.workflows.delegation import MANAGER_TOOL, DelegateTool, Team, remember
from agentensemble.workflows.team import MANAGER_ROLE

MANAGER_GOAL = (
    "Get the team's tasks done well by handing each piece of work to the best-suited worker, "
    "then combine their results into the final answer"
)
_log = get_logger()


@dataclass(frozen=True)
class ManagerSetup:
    """The manager's model and tool-call budget, and the team it delegates to."""

    team: Team
    model: ChatModel
    max_iterations: int = 20


def manager_brief(prepared: Sequence[PreparedTask]) -> str:
    """The manager's task prompt: every task in order, with the agent it names and the tasks
    whose results it builds on (its ``context``), if any."""
    lines = ["Complete these tasks with your team:"]
    number = {id(item.task): index for index, item in enumerate(prepared, start=1)}
    for index, item in enumerate(prepared, start=1):
        lines.append(f"\n{index}. {item.description}\n   Expected output: {item.expected_output}")
        if item.task.agent is not None:
            lines.append(f"   Suggested worker: {item.task.agent.role}")
        needs = [str(number[id(t)]) for t in item.task.context if id(t) in number]
        if needs:
            lines.append(f"   Builds on the results of task(s): {', '.join(needs)}")
    lines.append(
        f"\nUse the {MANAGER_TOOL} tool to give work to a worker (by its role) with complete "
        "instructions; you may delegate as often as needed. When the work is done, answer "
        "with the final result yourself."
    )
    return "\n".join(lines)


def manager_attachments(prepared: Sequence[Any], inputs: Mapping[str, Any]) -> list[Any]:
    """Every task's attachments (``templates.task_attachments``), for the manager: it sees them;
    its workers get its instructions, in text."""
    return distinct(a for item in prepared for a in task_attachments(item.task, inputs))


def manager_background(team: Team) -> str:
    listing = "\n".join(f"- {w.role}: {w.goal}" for w in team.workers)
    return f"You lead this team of workers:\n{listing}"


class HierarchicalRunner:
    """Runs the manager; the delegations it makes are the run's task outputs."""

    def __init__(self, setup: ManagerSetup) -> None:
        self.setup = setup

    async def run(
        self, run: PreparedRun, env: ExecutionEnv, inputs: Mapping[str, Any]
    ) -> EnsembleOutput:
        prepared = run.tasks
        started = time.perf_counter()
        team = self.setup.team
        team.env = env
        team.memory_for = team_memory(prepared)
        last = prepared[-1]
        manager = AgentTask(
            role=MANAGER_ROLE,
            goal=MANAGER_GOAL,
            background=manager_background(team),
            description=manager_brief(prepared),
            expected_output=last.expected_output,
            model=self.setup.model,
            max_iterations=self.setup.max_iterations,
            tools=ToolResolver().resolve([DelegateTool(team, MANAGER_ROLE, manager=True)]),
            memory=team.memory_for(MANAGER_ROLE, manager=True) if team.memory_for else None,
            attachments=manager_attachments(prepared, inputs),
        )
        env.emitter.emit(TaskStarted(1, 1, manager.description, MANAGER_ROLE))
        exit_reason = ExitReason.COMPLETED
        try:
            final = await AgentExecutor(manager, env).run()
        except ExitEarlyError as stop:
            _log.info("run exited early", reason=stop.reason)
            return self._output(
                team.recorded, None, started, ExitReason.TIMEOUT if stop.timed_out else None
            )
        except Exception as error:
            env.emitter.emit(TaskFailed(1, 1, manager.description, error))
            raise TaskExecutionError(
                f"The manager failed: {type(error).__name__}: {error}",
                task=None,
                completed_outputs=team.recorded,
            ) from error
        if is_enabled(last.after_review):
            verdict = await ask_reviewer(
                env.review_handler,
                last.after_review,
                timing="after_execution",
                task_description=manager.description,
                output=final.raw,
                emitter=env.emitter,
            )
            if verdict.revised_text is not None:
                final = final.model_copy(update={"raw": verdict.revised_text, "parsed": None})
            if verdict.stop:
                exit_reason = (
                    ExitReason.TIMEOUT if verdict.timed_out else ExitReason.USER_EXIT_EARLY
                )
        if manager.memory is not None:  # the session: the manager's answer, after any edit
            await remember(manager.memory, manager.description, final.raw)
        env.emitter.emit(TaskCompleted(1, 1, final))
        return self._output(team.recorded, final, started, exit_reason)

    @staticmethod
    def _output(
        delegations: list[TaskOutput],
        final: TaskOutput | None,
        started: float,
        exit_reason: ExitReason | None,
    ) -> EnsembleOutput:
        """Delegations as task outputs; the manager's answer as raw, its tokens counted."""
        summary = EnsembleOutput.from_tasks(
            delegations,
            exit_reason=exit_reason or ExitReason.USER_EXIT_EARLY,
            total_duration=timedelta(seconds=time.perf_counter() - started),
        )
        if final is None:
            return summary
        output = summary.model_copy(
            update={
                "raw": final.raw,
                "usage": summary.usage + final.usage,
                "total_tool_calls": summary.total_tool_calls + len(final.tool_calls),
            }
        )
        output._extra_costs = [final.cost_usd] if final.llm_calls else []  # the manager's own
        return output


__all__ = ["HierarchicalRunner", "ManagerSetup", "manager_brief"]
