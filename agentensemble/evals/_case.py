"""``Case`` and the models of ``Dataset`` (below ``_files.py``, which reads and writes the file
form and builds these, and below ``dataset.py``, which adds the file methods: no import circle)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from typing_extensions import Self


def _callables(value: list[Any]) -> list[Any]:
    for index, evaluator in enumerate(value):
        if not callable(evaluator):
            raise ValueError(
                f"evaluator {index} is a {type(evaluator).__name__}, not an evaluator: use one "
                "of agentensemble.evals' evaluators or a callable (ctx) -> bool | float | "
                "EvaluatorResult"
            )
    return value


class Case(BaseModel):
    """One scenario: the ensemble's ``inputs``, the ``expected`` answer, its own evaluators."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = Field(min_length=1)
    inputs: dict[str, Any] = Field(default_factory=dict)
    expected: Any = None
    evaluators: list[Any] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    _check_evaluators = field_validator("evaluators")(_callables)


class DatasetModel(BaseModel):
    """Named cases; ``evaluators`` apply to every case, beside each case's own (the file
    methods are ``dataset.Dataset``'s)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = Field(min_length=1)
    cases: list[Case]
    evaluators: list[Any] = Field(default_factory=list)

    _check_evaluators = field_validator("evaluators")(_callables)

    @model_validator(mode="after")
    def _unique_names(self) -> Self:
        seen: set[str] = set()
        for case in self.cases:
            if case.name in seen:
                raise ValueError(f"two cases are named {case.name!r}: case names must be unique")
            seen.add(case.name)
        return self

    def evaluators_for(self, case: Case) -> list[Any]:
        """The dataset's evaluators, then the case's own."""
        return [*self.evaluators, *case.evaluators]

    def only(self, *names: str) -> Self:
        """The same dataset with only the named cases (one test per case, for instance)."""
        unknown = set(names) - {case.name for case in self.cases}
        if unknown:
            raise KeyError(f"no case named {', '.join(sorted(unknown))} in {self.name!r}")
        return self.model_copy(update={"cases": [c for c in self.cases if c.name in names]})


__all__ = ["Case", "DatasetModel"]
