"""``agentensemble eval crew.yaml dataset.yaml``: run a dataset against a crew file, print the
report, and exit 0 when it passes (and nothing regressed against ``--baseline``), 1 when it
does not, 2 on bad input (a bad crew file, dataset, baseline or option)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TextIO

from agentensemble.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Command
from agentensemble.cli._common import (
    MODEL_ENV,
    UsageError,
    check_output_path,
    load_crew,
    print_out,
    report_error,
)
from agentensemble.cli._options import whole_number
from agentensemble.errors import ConfigurationError

if TYPE_CHECKING:
    from agentensemble.evals import Case, CaseRun, Dataset, EvalReport

MAX_REPEAT = 10_000
MAX_CONCURRENCY = 1_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("crew", help="the crew file (YAML)")
    parser.add_argument("dataset", help="the dataset file (.yaml, .yml or .json)")
    parser.add_argument(
        "--repeat",
        type=whole_number("--repeat", None, MAX_REPEAT),
        default=1,
        metavar="N",
        help="runs per case",
    )
    parser.add_argument(
        "--max-concurrency",
        type=whole_number("--max-concurrency", None, MAX_CONCURRENCY),
        default=4,
        metavar="K",
        help="runs at once (default 4)",
    )
    parser.add_argument("--save", metavar="PATH", help="save the report as JSON")
    parser.add_argument("--html", metavar="PATH", help="save the report as an HTML page")
    parser.add_argument(
        "--baseline", metavar="PATH", help="a saved report: exit 1 if any case regressed"
    )
    parser.add_argument(
        "--min-pass-rate",
        type=float,
        default=1.0,
        metavar="X",
        help="the dataset passes when this share of cases passes (default 1.0: all)",
    )
    parser.add_argument(
        "--model",
        help=f"use this model for every agent ('scripted' for an offline dry run, which also "
        f"scripts LLM judges); default: ${MODEL_ENV}, else the file's settings",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


class ProgressBar:
    """One line redrawn on a terminal: ``[#####-----] 12/30 runs, 2 failed``."""

    WIDTH = 30

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._failed = 0

    def __call__(self, done: int, total: int, case: Case, run: CaseRun) -> None:
        self._failed += not run.passed
        filled = self.WIDTH * done // total
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        self._stream.write(f"\r[{bar}] {done}/{total} runs, {self._failed} failed")
        if done == total:
            self._stream.write("\n")
        self._stream.flush()


def scripted_judges(dataset: Dataset) -> Dataset:
    """The dataset with every LLMJudge answered offline (a dry run has no model to ask)."""
    import dataclasses

    from agentensemble.evals import LLMJudge
    from agentensemble.testing import FunctionChatModel

    judge_model = FunctionChatModel(
        lambda messages, tools: '{"score": 1.0, "reason": "scripted judge (dry run)"}'
    )

    def offline(evaluators: list[Any]) -> list[Any]:
        return [
            dataclasses.replace(e, llm=judge_model) if isinstance(e, LLMJudge) else e
            for e in evaluators
        ]

    cases = [
        case.model_copy(update={"evaluators": offline(case.evaluators)}) for case in dataset.cases
    ]
    return dataset.model_copy(update={"evaluators": offline(dataset.evaluators), "cases": cases})


def _check_crew(ensemble: Any) -> None:
    """Every check a run makes before its first model call (as ``validate`` does): tools,
    reviews, models and their keys; each case's own inputs are checked by its runs."""
    from agentensemble.cli._common import check_before_any_call

    check_before_any_call(ensemble, {})


def _inputs(args: argparse.Namespace) -> tuple[Dataset, EvalReport | None]:
    from pydantic import ValidationError

    from agentensemble._base.regular_file import UnreadableFile
    from agentensemble.evals import Dataset, EvalReport

    if args.repeat < 1 or args.max_concurrency < 1:
        raise UsageError("--repeat and --max-concurrency take a whole number of at least 1")
    if not 0.0 <= args.min_pass_rate <= 1.0:
        raise UsageError("--min-pass-rate takes a number from 0 to 1, e.g. 0.9")
    for option, path in (("--save", args.save), ("--html", args.html)):
        if path:
            check_output_path(option, path)  # before paying for the runs, not after them
    dataset = Dataset.from_file(args.dataset)
    _check_crew(load_crew(args))
    baseline = None
    if args.baseline:
        try:
            baseline = EvalReport.load(args.baseline)
        except (UnreadableFile, ValidationError) as error:
            first = error.errors()[0]["msg"] if isinstance(error, ValidationError) else error
            raise UsageError(f"--baseline {args.baseline}: not a saved report: {first}") from None
    return dataset, baseline


def run(args: argparse.Namespace) -> int:
    import os

    from agentensemble.evals import evaluate

    try:
        dataset, baseline = _inputs(args)
    except (UsageError, ConfigurationError) as error:
        return report_error(args, error, EXIT_USAGE)
    if (args.model or os.environ.get(MODEL_ENV)) == "scripted":
        dataset = scripted_judges(dataset)
    progress = ProgressBar(sys.stderr) if sys.stderr.isatty() else None
    report = evaluate(
        lambda: load_crew(args),
        dataset,
        repeat=args.repeat,
        max_concurrency=args.max_concurrency,
        on_progress=progress,
    )
    if args.json:  # the report first: a failing save must not lose it
        print_out(report.to_json())  # the answers and reasons in it: escaped on a terminal
    else:
        report.print(baseline=baseline, min_pass_rate=args.min_pass_rate)
    saves: list[tuple[str, str | None, Any]] = [
        ("--save", args.save, lambda: report.save(args.save)),
        (
            "--html",
            args.html,
            lambda: report.save_html(args.html, baseline, min_pass_rate=args.min_pass_rate),
        ),
    ]
    for option, path, save in saves:
        if path:
            try:
                save()
            except OSError as error:
                reason = error.strerror or type(error).__name__
                message = f"{option}: cannot write {path!r}: {reason}"
                return report_error(args, UsageError(message), EXIT_FAILED)
    return _verdict(report, baseline, args.min_pass_rate)


def _verdict(report: EvalReport, baseline: EvalReport | None, min_pass_rate: float) -> int:
    problems = []
    if report.pass_rate < min_pass_rate:
        problems.append(f"pass rate {report.pass_rate:.0%} is below {min_pass_rate:.0%}")
    if baseline is not None:
        diff = report.compare(baseline)
        if diff.regressions:
            problems.append(f"{len(diff.regressions)} case(s) regressed against the baseline")
    if problems:
        print(f"agentensemble: evaluation failed: {'; '.join(problems)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


COMMAND = Command(
    name="eval",
    help="run a dataset of cases against a crew file and report what passed",
    add_arguments=add_arguments,
    run=run,
)

__all__ = ["COMMAND", "ProgressBar", "scripted_judges"]
