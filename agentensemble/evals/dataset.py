"""``Case`` and ``Dataset``: what to run and what to check, in Python or in a YAML/JSON file.

A file has top-level ``name``, ``evaluators`` (applied to every case) and ``cases``; each case
has ``name``, ``inputs``, ``expected``, ``metadata`` and ``evaluators``. Reading and writing the
file form is ``_files.py``'s job; the models are ``_case.py``'s, below both.
"""

from __future__ import annotations

import os
from typing import Any

from agentensemble.evals._case import Case, DatasetModel
from agentensemble.evals._files import dataset_data, read_dataset, write_dataset


class Dataset(DatasetModel):
    """Named cases; ``evaluators`` apply to every case, beside each case's own."""

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Dataset:
        """A dataset from ``.yaml``/``.yml``/``.json``; errors name the file, line and key."""
        return read_dataset(path, cls)

    def to_data(self) -> dict[str, Any]:
        """The file form as plain data (evaluators as names or one-key mappings)."""
        return dataset_data(self)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the file form: JSON for ``.json``, else YAML. Reads back with ``from_file``."""
        write_dataset(self, path)


__all__ = ["Case", "Dataset"]
