"""``Case`` and ``Dataset``: what to run and what to check, in Python or in a YAML/JSON file.

A file has top-level ``name``, ``evaluators`` (applied to every case) and ``cases``; each case
has ``name``, ``inputs``, ``expected``, ``metadata`` and ``evaluators``. Reading and writing the
file form is ``_files.py``'s job; this module holds the models.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


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


class Dataset(BaseModel):
    """Named cases; ``evaluators`` apply to every case, beside each case's own."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = Field(min_length=1)
    cases: list[Case]
    evaluators: list[Any] = Field(default_factory=list)

    _check_evaluators = field_validator("evaluators")(_callables)

    @model_validator(mode="after")
    def _unique_names(self) -> Dataset:
        seen: set[str] = set()
        for case in self.cases:
            if case.name in seen:
                raise ValueError(f"two cases are named {case.name!r}: case names must be unique")
            seen.add(case.name)
        return self

    def evaluators_for(self, case: Case) -> list[Any]:
        """The dataset's evaluators, then the case's own."""
        return [*self.evaluators, *case.evaluators]

    def only(self, *names: str) -> Dataset:
        """The same dataset with only the named cases (one test per case, for instance)."""
        unknown = set(names) - {case.name for case in self.cases}
        if unknown:
            raise KeyError(f"no case named {', '.join(sorted(unknown))} in {self.name!r}")
        return self.model_copy(update={"cases": [c for c in self.cases if c.name in names]})

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Dataset:
        """A dataset from ``.yaml``/``.yml``/``.json``; errors name the file, line and key."""
        from agentensemble.evals._files import read_dataset

        return read_dataset(path)

    def to_data(self) -> dict[str, Any]:
        """The file form as plain data (evaluators as names or one-key mappings)."""
        from agentensemble.evals._files import dataset_data

        return dataset_data(self)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the file form: JSON for ``.json``, else YAML. Reads back with ``from_file``."""
        from agentensemble.evals._files import write_dataset

        write_dataset(self, path)


__all__ = ["Case", "Dataset"]
