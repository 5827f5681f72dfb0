"""litellm's model table (capabilities, prices) read as data, without importing litellm.

litellm ships its model table as JSON (``model_prices_and_context_window_backup.json``), and
with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (which we set) that file is exactly what litellm
itself consults. The openai lane reads it directly, lazily and once, so asking "does this model
take a JSON-schema response_format?" costs ~35 ms the first time instead of a litellm import.
When litellm is already loaded it stays the authority. This is also the seam for per-call cost
on the openai lane (``model_info(name)`` holds ``input_cost_per_token`` and friends).
"""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path
from typing import Any

from agentensemble.llm._litellm import is_loaded, load_litellm

_TABLE_FILE = "model_prices_and_context_window_backup.json"
_lock = threading.Lock()
_table: dict[str, Any] | None = None


def _load() -> dict[str, Any]:
    global _table
    with _lock:
        if _table is None:
            _table = {}
            spec = importlib.util.find_spec("litellm")  # finds the package, imports nothing
            if spec is not None and spec.origin is not None:
                path = Path(spec.origin).parent / _TABLE_FILE
                try:
                    loaded = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    loaded = {}
                _table = loaded if isinstance(loaded, dict) else {}
        return _table


def model_info(model: str) -> dict[str, Any] | None:
    """The table's entry for ``model`` (``openai/gpt-4o`` or ``gpt-4o``), if it has one."""
    table = _load()
    name = model.split("/", 1)[1] if model.startswith("openai/") else model
    for key in (model, name, f"openai/{name}"):
        entry = table.get(key)
        if isinstance(entry, dict):
            return entry
    return None


def supports_response_schema(model: str) -> bool:
    """Whether ``model`` takes a JSON-schema ``response_format``: litellm's answer, from litellm
    when it is loaded, else from its table."""
    if is_loaded():
        try:
            return bool(load_litellm().supports_response_schema(model=model))
        except Exception:
            return False
    return table_supports_response_schema(model)


def table_supports_response_schema(model: str) -> bool:
    """The table's own answer (what litellm answers, without litellm)."""
    info = model_info(model)
    return bool(info and info.get("supports_response_schema") is True)


__all__ = ["model_info", "supports_response_schema", "table_supports_response_schema"]
