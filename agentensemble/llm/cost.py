"""What a model call cost, from litellm's bundled price table: read locally, never fetched.

When litellm is already loaded its ``model_cost`` table is used (our loader makes litellm read
the bundled copy, and prices a user registered with ``litellm.register_model`` count too);
otherwise the JSON file shipped inside the litellm package is read directly, without importing
litellm. An unknown model costs ``None``, never a made-up 0.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agentensemble.llm._litellm import is_loaded, load_litellm
from agentensemble.outputs import TokenUsage

_PRICE_FILE = "model_prices_and_context_window_backup.json"
_lock = threading.Lock()
_bundled: dict[str, Any] | None = None


def _bundled_prices() -> Mapping[str, Any]:
    """The price table inside the installed litellm package (read once; empty if missing)."""
    global _bundled
    if _bundled is None:
        with _lock:
            if _bundled is None:
                _bundled = _read_bundled()
    return _bundled


def _read_bundled() -> dict[str, Any]:
    spec = importlib.util.find_spec("litellm")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / _PRICE_FILE
        if path.is_file():
            try:
                table = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return {}
            return table if isinstance(table, dict) else {}
    return {}


def price_table() -> Mapping[str, Any]:
    """Model name -> price entry (``input_cost_per_token``, ``output_cost_per_token``...)."""
    if is_loaded():
        table = getattr(load_litellm(), "model_cost", None)
        if isinstance(table, Mapping) and table:
            return table
    return _bundled_prices()


def _candidates(names: Iterable[object]) -> list[str]:
    found: list[str] = []
    for name in names:
        if not isinstance(name, str) or not name:  # a provider's "model" may be anything
            continue
        found.append(name)
        if "/" in name:
            found.append(name.split("/", 1)[1])  # "openai/gpt-4o-mini" -> "gpt-4o-mini"
    return found


def _price(entry: Any, key: str) -> float | None:
    value = entry.get(key) if isinstance(entry, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


#: Per-token USD: prompt, completion, cache read, cache write (the last two default to prompt).
Prices = tuple[float, float, float, float]


def _prices(table: Mapping[str, Any], models: tuple[object, ...]) -> Prices | None:
    """Per-token USD of the first of ``models`` ``table`` prices: prompt, completion, and the
    cache read and cache write rates (``cache_read_input_token_cost``,
    ``cache_creation_input_token_cost``; the prompt rate where the table gives none)."""
    for name in _candidates(models):
        entry = table.get(name)
        prompt = _price(entry, "input_cost_per_token")
        completion = _price(entry, "output_cost_per_token")
        if prompt is not None and completion is not None:
            read = _price(entry, "cache_read_input_token_cost")
            write = _price(entry, "cache_creation_input_token_cost")
            return (
                prompt,
                completion,
                prompt if read is None else read,
                prompt if write is None else write,
            )
    return None


#: (prompt, completion) prices by the ``models`` asked about, looked up in the bundled table
#: only: that table is ours and never changes once read, while litellm's ``model_cost`` (the
#: table once litellm is loaded) changes in place when a user registers a model, so lookups
#: in it are never kept. Bounded: a provider's model names are not ours to count.
_bundled_lookups: dict[tuple[object, ...], Prices | None] = {}
_MAX_LOOKUPS = 256


def cost_usd(usage: TokenUsage, *models: object) -> float | None:
    """USD for ``usage`` under the first of ``models`` the price table knows; None if none.

    Cached prompt tokens are priced at the cache read rate and cache writes at the write rate;
    both are within ``prompt_tokens`` (as providers report them), so the rest pays the full rate.
    """
    table = price_table()
    if table is _bundled:
        try:
            prices = _bundled_lookups[models]
        except KeyError:
            prices = _prices(table, models)
            if len(_bundled_lookups) >= _MAX_LOOKUPS:
                _bundled_lookups.clear()
            _bundled_lookups[models] = prices
        except TypeError:  # an unhashable "model" from a provider
            prices = _prices(table, models)
    else:
        prices = _prices(table, models)
    if prices is None:
        return None
    prompt, completion, read, write = prices
    cached = min(usage.cached_prompt_tokens, usage.prompt_tokens)
    written = min(usage.cache_write_tokens, usage.prompt_tokens - cached)
    full = usage.prompt_tokens - cached - written
    return full * prompt + cached * read + written * write + usage.completion_tokens * completion


def add_costs(costs: Iterable[float | None]) -> float | None:
    """Sum of costs; None as soon as one is unknown (or there is none to add)."""
    total: float | None = None
    for cost in costs:
        if cost is None:
            return None
        total = cost if total is None else total + cost
    return total


__all__ = ["add_costs", "cost_usd", "price_table"]
