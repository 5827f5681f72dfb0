"""``evaluate`` / ``aevaluate``: run every case ``repeat`` times, at most ``max_concurrency``
at once, and judge each run with the dataset's and the case's evaluators.

Nothing one run does stops another: a run that raises fails its case with the error, an
evaluator that raises fails itself with the error as its reason.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone
from typing import Any, Union

from agentensemble.ensemble import Ensemble
from agentensemble.evals._results import EvalContext, EvaluatorResult, as_result, shorten
from agentensemble.evals.dataset import Case, Dataset
from agentensemble.evals.evaluators import evaluator_name
from agentensemble.evals.report import CaseResult, CaseRun, EvalReport, mean_scores
from agentensemble.outputs import EnsembleOutput

Target = Union[Ensemble, Callable[[], Any]]  # noqa: UP007 (a runtime alias on Python 3.10)
#: Called after each run with (runs done, runs in all, the run's case, the run).
Progress = Callable[[int, int, Case, CaseRun], None]


def _keys(evaluators: list[Any]) -> list[str]:
    """Result keys: the evaluator's name, numbered from the second of the same name on."""
    keys: list[str] = []
    for evaluator in evaluators:
        name = evaluator_name(evaluator)
        key, n = name, 1
        while key in keys:
            n += 1
            key = f"{name}#{n}"
        keys.append(key)
    return keys


def _failure(error: BaseException) -> str:
    return shorten(f"{type(error).__name__}: {error}")


async def judge(evaluator: Any, ctx: EvalContext) -> EvaluatorResult:
    """One evaluator's verdict; an evaluator that raises fails with the error as reason."""
    try:
        answer = evaluator(ctx)
        if inspect.isawaitable(answer):
            answer = await answer
        return as_result(answer)
    except Exception as error:
        return EvaluatorResult(passed=False, score=0.0, reason=f"raised {_failure(error)}")


#: Produces one run's output: ``(case, attempt) -> EnsembleOutput`` (raises if the run fails).
Produce = Callable[[Case, int], Awaitable[EnsembleOutput]]


def local_runs(target: Target) -> Produce:
    """Runs in this process: a fresh ensemble from the factory (or the shared ensemble)."""

    async def produce(case: Case, attempt: int) -> EnsembleOutput:
        ensemble = target if isinstance(target, Ensemble) else target()
        if inspect.isawaitable(ensemble):
            ensemble = await ensemble
        if not isinstance(ensemble, Ensemble):
            raise TypeError(f"the factory returned a {type(ensemble).__name__}, not an Ensemble")
        return await ensemble.arun(case.inputs)

    return produce


async def run_case(
    produce: Produce, case: Case, attempt: int, evaluators: list[Any], *, own_time: bool = False
) -> CaseRun:
    """One run of ``case``, then every evaluator. ``own_time``: the duration is the run's own
    (``EnsembleOutput.total_duration``), not the wait for it (a queue's, for durable runs)."""
    start = time.perf_counter()
    try:
        output = await produce(case, attempt)
    except Exception as error:  # the case fails with it; the other runs go on
        took = timedelta(seconds=time.perf_counter() - start)
        return CaseRun(output=None, error=_failure(error), duration=took)
    took = timedelta(seconds=time.perf_counter() - start)
    if own_time:
        took = output.total_duration
    ctx = EvalContext(case=case, output=output, expected=case.expected, duration=took)
    results = {
        key: await judge(e, ctx) for key, e in zip(_keys(evaluators), evaluators, strict=True)
    }
    return CaseRun(output=output, duration=took, results=results)


async def aevaluate(
    target: Target,
    dataset: Dataset,
    *,
    repeat: int = 1,
    max_concurrency: int = 4,
    on_progress: Progress | None = None,
    runtime: Any = None,
    eval_id: str | None = None,
) -> EvalReport:
    """Run ``dataset`` against ``target`` (an Ensemble, or a factory giving a fresh one per
    run: use one when the ensemble holds state, such as a scripted model).

    With ``runtime`` (a launched ``agentensemble.durable.DurableRuntime``), ``target`` is the
    name an ensemble is registered under and the runs are queued for the runtime's workers;
    ``eval_id`` names the evaluation, so evaluating again under the same id pays for no run
    twice: finished runs are read back, unfinished ones resumed (docs/evals.md)."""
    if repeat < 1 or max_concurrency < 1:
        raise ValueError("repeat and max_concurrency are at least 1")
    if runtime is not None:
        from agentensemble.evals._durable import durable_runs

        eval_id = eval_id or uuid.uuid4().hex
        produce = durable_runs(runtime, target, eval_id)
    elif isinstance(target, Ensemble) or callable(target):
        produce = local_runs(target)
    else:
        raise TypeError("evaluate() takes an Ensemble or a function that returns one")
    started_at, start = datetime.now(timezone.utc), time.perf_counter()
    runs: list[list[CaseRun | None]] = [[None] * repeat for _ in dataset.cases]
    pending = iter([(i, a) for i in range(len(dataset.cases)) for a in range(repeat)])
    total, done = len(dataset.cases) * repeat, 0

    async def worker() -> None:  # takes the next run until none is left
        nonlocal done
        for index, attempt in pending:
            case = dataset.cases[index]
            run = await run_case(
                produce, case, attempt, dataset.evaluators_for(case), own_time=runtime is not None
            )
            runs[index][attempt] = run
            done += 1
            if on_progress is not None:
                on_progress(done, total, case, run)

    # max_concurrency workers, not a waiting task per run: what is in flight stays bounded
    await asyncio.gather(*(worker() for _ in range(min(max_concurrency, total))))
    cases = []
    for case, case_runs in zip(dataset.cases, runs, strict=True):
        finished = [run for run in case_runs if run is not None]
        cases.append(
            CaseResult(
                case=case,
                passed=all(run.passed for run in finished),
                runs=finished,
                scores=mean_scores(finished),
            )
        )
    took = timedelta(seconds=time.perf_counter() - start)
    return EvalReport(
        name=dataset.name,
        cases=cases,
        repeat=repeat,
        started_at=started_at,
        duration=took,
        eval_id=eval_id,
    )


def evaluate(
    target: Target,
    dataset: Dataset,
    *,
    repeat: int = 1,
    max_concurrency: int = 4,
    on_progress: Progress | None = None,
    runtime: Any = None,
    eval_id: str | None = None,
) -> EvalReport:
    """``aevaluate`` from synchronous code (scripts, tests, Jupyter)."""
    from agentensemble._base.background_loop import run_on_background_loop

    return run_on_background_loop(
        aevaluate(
            target,
            dataset,
            repeat=repeat,
            max_concurrency=max_concurrency,
            on_progress=on_progress,
            runtime=runtime,
            eval_id=eval_id,
        )
    )


__all__ = [
    "Produce",
    "Progress",
    "Target",
    "aevaluate",
    "evaluate",
    "judge",
    "local_runs",
    "run_case",
]
