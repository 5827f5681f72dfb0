"""A run's internal API: what ``Ensemble.arun``/``astream`` and the layers above the facade
(``serve/``, ``durable/``, ``cli/``) call to check and start a run, instead of the facade's
private methods.

- ``check_setup``: every task's tools resolve and every gate has a reviewer.
- ``execute``: one run, with extra listeners, streamed or not.
- ``team_and_settings``: the run's team (workers, peers, the manager's) and its runner settings.

The ensemble is typed ``Any`` here, as in ``workflows/prepare.py``: this module sits below
``ensemble.py`` (the facade calls it), so it cannot import the class, even for type checking.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from agentensemble import _memory_wiring as memory_wiring
from agentensemble.errors import TaskExecutionError
from agentensemble.events import (
    EnsembleCompleted,
    EnsembleFailed,
    EnsembleListener,
    EnsembleStarted,
    EventEmitter,
)
from agentensemble.execution.agent_executor import ExecutionEnv
from agentensemble.hints import check_inputs, warn_missing_context
from agentensemble.limits import UsageLimits, check_limits, check_prices, limit_error, metered
from agentensemble.llm.streaming import EventSink, use_sink
from agentensemble.outputs import EnsembleOutput
from agentensemble.run_context import current_run_id, new_run_id, run_scope
from agentensemble.task_memory import use_run_memory_store
from agentensemble.tools.source import open_tool_sources, tool_sources_in
from agentensemble.workflows import Workflow
from agentensemble.workflows.base import PreparedRun, WorkflowRunner
from agentensemble.workflows.prepare import (
    check_inputs_for,
    prepare_run,
    resolve_tools,
    team_and_task_agents,
)
from agentensemble.workflows.runners import RunSettings, runner_for
from agentensemble.workflows.step import leaf_tasks, step_kind
from agentensemble.workflows.team import build_team, model_resolver, resolve_model

if TYPE_CHECKING:
    from agentensemble.workflows.delegation import Team


def check_setup(ensemble: Any) -> None:
    """Every task's tools resolve and every gate has a reviewer (asked when the ensemble is
    built, and again by servers before they serve an ensemble that may have changed since)."""
    resolve_tools(leaf_tasks(ensemble.tasks), ensemble.review_handler, ensemble.review_policy)


async def execute(
    ensemble: Any,
    inputs: Mapping[str, Any] | None,
    extra_listeners: Sequence[EnsembleListener] = (),
    stream: bool = False,
    *,
    session: str | None = None,
    limits: UsageLimits | None = None,
) -> EnsembleOutput:
    """One run, counted on a budget: ``limits``, else the ensemble's (``limits.py``). A
    ``cost_usd`` limit with a model of unknown price is refused before anything starts; a
    run a limit stopped raises ``UsageLimitExceeded`` holding every completed output."""
    chosen = ensemble.limits if limits is None else check_limits(limits, "run(limits=...)")
    if chosen is None:  # counted on an enclosing run's budget, if any
        return await _execute_run(ensemble, inputs, extra_listeners, stream, session=session)
    agents = team_and_task_agents(ensemble)
    models = [ensemble.llm, ensemble.manager_llm, *(agent.llm for agent in agents)]
    policies = [ensemble.context_policy, *(agent.context_policy for agent in agents)]
    models += [policy.summarize_with for policy in policies if policy is not None]
    check_prices(chosen, models)
    with metered(chosen):
        try:
            return await _execute_run(ensemble, inputs, extra_listeners, stream, session=session)
        except TaskExecutionError as error:
            stopped = limit_error(error)
            if stopped is None:
                raise
            stopped.task = error.task
            raise stopped from None


async def _execute_run(
    ensemble: Any,
    inputs: Mapping[str, Any] | None,
    extra_listeners: Sequence[EnsembleListener],
    stream: bool = False,
    *,
    session: str | None = None,
) -> EnsembleOutput:
    """One run. Bad inputs fail before anything starts; tool sources (MCP servers) are
    started next, once for the whole run, and closed when it ends, whatever way it ends;
    then the run is prepared, once (``workflows/prepare.py``), and handed to its runner.
    A plain run's preparation and runner are kept from the ensemble's second run on, while
    nothing they were made from changes (``workflows/_reuse.py``)."""
    from agentensemble.workflows._reuse import keep_run, reused_run  # loaded by a first run

    values = check_inputs(inputs)
    kept = reused_run(ensemble, values, session)
    if kept is not None:  # the same plain run as last time, checked and prepared then
        _warn_missing_context(ensemble)
        prepared, runner = kept
        return await _run_prepared(
            ensemble, prepared, runner, None, values, extra_listeners, stream
        )
    agents = team_and_task_agents(ensemble)
    tasks = leaf_tasks(ensemble.tasks)
    check_inputs_for(ensemble, values, tasks=tasks, agents=agents)
    hierarchical = ensemble.workflow is Workflow.HIERARCHICAL
    session = memory_wiring.check_session(session, ensemble.memory, hierarchical)
    knowledge = memory_wiring.knowledge_of(ensemble.knowledge, tasks)
    if knowledge:
        await memory_wiring.sync_knowledge(knowledge, ensemble.memory)
    sources = tool_sources_in([*(agent.tools for agent in agents), *(t.tools for t in tasks)])
    async with open_tool_sources(sources):
        prepared = prepare_run(ensemble, values, inputs_checked=True, session=session)
        _warn_missing_context(ensemble)
        team, settings = team_and_settings(ensemble, prepared, values)
        runner = runner_for(ensemble.workflow, settings)
        if not sources and team is None:
            keep_run(ensemble, values, session, (prepared, runner))
        memory = ensemble.memory
        with use_run_memory_store(memory) if memory is not None else nullcontext():
            return await _run_prepared(
                ensemble, prepared, runner, team, values, extra_listeners, stream
            )


def _warn_missing_context(ensemble: Any) -> None:
    warn_missing_context([t for t in ensemble.tasks if step_kind(t) == "task"])


async def _run_prepared(
    ensemble: Any,
    prepared: PreparedRun,
    runner: WorkflowRunner,
    team: Team | None,
    values: dict[str, Any],
    extra_listeners: Sequence[EnsembleListener],
    stream: bool,
) -> EnsembleOutput:
    """One prepared run under its own run id (bound for events, logs and errors)."""
    from agentensemble.tracing.recorder import TraceRecorder  # loaded by the first run

    with run_scope(new_run_id()) as parent_run_id:
        recorder = TraceRecorder(
            current_run_id(),
            capture=ensemble.capture,
            workflow=ensemble.workflow._value_,  # ``.value`` is a Python property: two calls
            inputs=values,
            parent_run_id=parent_run_id,
        )
        listeners = [recorder, *ensemble.listeners, *extra_listeners]
        if ensemble.verbose:
            from agentensemble.progress import ConsoleProgressListener

            listeners.append(ConsoleProgressListener())
        env = ExecutionEnv(
            emitter=EventEmitter(listeners),
            review_handler=ensemble.review_handler,
            context_policy=ensemble.context_policy,
            tool_policy=ensemble.tool_policy,
        )
        env.emitter.emit(EnsembleStarted(total_tasks=prepared.total, parent_run_id=parent_run_id))
        if team is not None:
            team.env = env
        try:
            if stream:
                with use_sink(EventSink(env.emitter.emit)):
                    output = await runner.run(prepared, env, values)
            else:  # no ``nullcontext()``: three Python calls a run for nothing
                output = await runner.run(prepared, env, values)
        except TaskExecutionError as error:
            error.trace = recorder.fail(error)
            env.emitter.emit(EnsembleFailed(error))
            raise
        except (asyncio.CancelledError, KeyboardInterrupt) as stopped:
            # cancelled, Ctrl-C, or a stream left early: listeners (a web console, spans)
            # learn the run ended instead of showing it running forever
            recorder.fail(stopped)
            env.emitter.emit(EnsembleFailed(stopped))
            raise
        output = recorder.complete(
            output, tool_metrics=env.metrics.snapshot(), run_id=current_run_id()
        )
        env.emitter.emit(EnsembleCompleted(output=output))
        return output


def team_and_settings(
    ensemble: Any, prepared: PreparedRun, inputs: Mapping[str, Any]
) -> tuple[Team | None, RunSettings]:
    """The run's team (workers and peers, workflows/team.py; fails before any model call) and
    the runner's settings (with the hierarchical manager's setup)."""
    team = build_team(
        ensemble.workflow,
        ensemble.agents,
        prepared.tasks,
        inputs,
        model_resolver(ensemble.llm, prepared.tasks),
        ensemble.max_delegation_depth,
        has_reviewer=ensemble.review_handler is not None,
    )
    manager = None
    if ensemble.workflow is Workflow.HIERARCHICAL and team is not None:
        from agentensemble.workflows.hierarchical import ManagerSetup

        chosen = ensemble.manager_llm if ensemble.manager_llm is not None else ensemble.llm
        manager = ManagerSetup(
            team=team,
            model=resolve_model(chosen, "the hierarchical manager (manager_llm)", {}),
            max_iterations=ensemble.manager_max_iterations,
        )
    settings = RunSettings(
        max_concurrency=ensemble.max_concurrency,
        parallel_error_strategy=ensemble.parallel_error_strategy,
        manager=manager,
    )
    return team, settings


__all__ = ["check_setup", "execute", "team_and_settings"]
