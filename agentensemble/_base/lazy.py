"""``lazy_exports``: a package's public names, each imported from its module on first use.

The one PEP 562 loader behind ``agentensemble``, ``agentensemble.llm`` and ``agentensemble.memory``:
a package lists ``name -> module`` and gets the ``__getattr__`` / ``__dir__`` pair that imports a
name when it is first read and stores it in the package's namespace, so later reads are plain
attribute lookups. Type checkers never see this: each package also imports its names under
``TYPE_CHECKING``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, table: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package`` over ``table``."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # later lookups are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *table})

    return __getattr__, __dir__


__all__ = ["lazy_exports"]
