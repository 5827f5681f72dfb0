"""``assert_dataset_passes``: a dataset as a test in your suite, failing with the report table.

```python
def test_capitals() -> None:
    assert_dataset_passes(make_ensemble, "evals/capitals.yaml", repeat=3)
```
"""

from __future__ import annotations

import io
import os

from agentensemble.evals.dataset import Dataset
from agentensemble.evals.report import EvalReport
from agentensemble.evals.runner import Target, evaluate


def assert_dataset_passes(
    target: Target,
    dataset: Dataset | str | os.PathLike[str],
    *,
    repeat: int = 1,
    max_concurrency: int = 4,
    min_pass_rate: float = 1.0,
    baseline: EvalReport | str | os.PathLike[str] | None = None,
) -> EvalReport:
    """Evaluate ``dataset`` (or the dataset file it names) and return the report; raise
    AssertionError with the whole table when the pass rate is below ``min_pass_rate`` or a
    case regressed against ``baseline`` (a report or a saved report's path)."""
    if not isinstance(dataset, Dataset):
        dataset = Dataset.from_file(dataset)
    if baseline is not None and not isinstance(baseline, EvalReport):
        baseline = EvalReport.load(baseline)
    report = evaluate(target, dataset, repeat=repeat, max_concurrency=max_concurrency)
    problems = []
    if report.pass_rate < min_pass_rate:
        problems.append(f"pass rate {report.pass_rate:.0%} < {min_pass_rate:.0%}")
    if baseline is not None and not report.compare(baseline).ok:
        problems.append("regressions against the baseline")
    if problems:
        table = io.StringIO()
        report.print(file=table, baseline=baseline)
        raise AssertionError(
            f"dataset {dataset.name!r} failed: {', '.join(problems)}\n\n{table.getvalue()}"
        )
    return report


__all__ = ["assert_dataset_passes"]
