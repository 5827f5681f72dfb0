"""What litellm's model table says about a model's capabilities, without importing litellm.

The openai lane must answer "does this model take a JSON-schema response_format?" exactly as the
litellm lane does, without the litellm import it exists to avoid. litellm answers from its model
table; ``cost.price_table()`` gives that same table (litellm's own when it is loaded, else the
JSON file bundled in the litellm package, read as data). When litellm is loaded it is asked
directly and stays the authority.
"""

from __future__ import annotations

from typing import Any

from agentensemble.llm._litellm import is_loaded, load_litellm
from agentensemble.llm.cost import price_table


def model_info(model: str) -> dict[str, Any] | None:
    """The table's entry for ``model`` (``openai/gpt-4o`` or ``gpt-4o``), if it has one."""
    table = price_table()
    name = model.split("/", 1)[1] if model.startswith("openai/") else model
    for key in (model, name, f"openai/{name}"):
        entry = table.get(key)
        if isinstance(entry, dict):
            return entry
    return None


def table_supports_response_schema(model: str) -> bool:
    """The table's own answer (what litellm answers, without litellm)."""
    info = model_info(model)
    return bool(info and info.get("supports_response_schema") is True)


def supports_response_schema(model: str) -> bool:
    """Whether ``model`` takes a JSON-schema ``response_format``: litellm's answer, from litellm
    when it is loaded, else from its table."""
    if is_loaded():
        try:
            return bool(load_litellm().supports_response_schema(model=model))
        except Exception:
            return False
    return table_supports_response_schema(model)


__all__ = ["model_info", "supports_response_schema", "table_supports_response_schema"]
