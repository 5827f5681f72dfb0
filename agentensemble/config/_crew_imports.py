"""The crew file's folder on ``sys.path`` while, and only while, its references are imported.

``tools: [mytools:search]`` means ``mytools.py`` beside the crew file, so its folder must be
importable when that reference is imported. Left on ``sys.path`` afterwards, its files would
shadow modules the user's process imports later (a ``json.py`` or ``utils.py`` beside the crew
file winning over the real one). So the folder goes first on ``sys.path`` around each import of a
reference and is taken off again; the modules imported meanwhile stay in ``sys.modules`` and keep
working (a module that imports a sibling lazily, inside a function, should import it at its top).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar

_folder: ContextVar[str | None] = ContextVar("agentensemble_crew_folder", default=None)


@contextmanager
def crew_folder(folder: str) -> Iterator[None]:
    """References imported inside this block may come from ``folder``."""
    token = _folder.set(folder)
    try:
        yield
    finally:
        _folder.reset(token)


def current_crew_folder() -> str | None:
    """The folder of the crew file being read (None for a dict)."""
    return _folder.get()


@contextmanager
def importable_crew_folder() -> Iterator[None]:
    """The current crew folder first on ``sys.path`` for this block (nothing for a dict)."""
    folder = _folder.get()
    if folder is None or folder in sys.path:
        yield
        return
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        with suppress(ValueError):  # our entry, wherever other code has moved it since
            sys.path.remove(folder)


__all__ = ["crew_folder", "current_crew_folder", "importable_crew_folder"]
