"""The import paths the private helpers had before they were grouped into ``_base/``.

A pickle names a function or class by its module path: a run's output pickled before the move
(a DBOS checkpoint, a joblib cache, a multiprocessing result) names ``agentensemble._deferred``
and ``agentensemble._interrupts``. Each old path stays importable as the very module it became,
with no file left at the old place: a finder at the end of ``sys.meta_path`` answers only for
these names, and only once the regular finders have found nothing.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from importlib.abc import Loader  # 12 ms to import: only its shape is needed

MOVED: dict[str, str] = {
    f"agentensemble._{name}": f"agentensemble._base.{name}"
    for name in (
        "background_loop",
        "dataclass",
        "deferred",
        "display",
        "dsn",
        "html",
        "interrupts",
        "lazy",
        "log_redaction",
        "naming",
        "prompt_layout",
        "saveable",
        "threads",
        "validation",
    )
}


class _SameModule:
    """Loads an old path as the module at its new path (one module object, two names): the
    loader protocol's two methods, without ``importlib.abc.Loader``'s import cost."""

    def __init__(self, new_name: str) -> None:
        self.new_name = new_name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return importlib.import_module(self.new_name)

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the module ran when it was imported at its new path."""


class OldPathFinder:
    """Finds a moved module by its old path; nothing else."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        new_name = MOVED.get(fullname)
        if new_name is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, cast("Loader", _SameModule(new_name)))


def keep_old_paths() -> None:
    """Install the finder once per process (idempotent, so a reloaded package adds no second)."""
    if not any(isinstance(finder, OldPathFinder) for finder in sys.meta_path):
        sys.meta_path.append(OldPathFinder())
