"""A run id names one run: reusing it with another ensemble or other inputs is refused.

DBOS treats a known workflow id as "the same run" and hands back the first run's result, so a
caller that reused an id for new work would silently get old output. Resuming or reading a run
by its id (same ensemble, same inputs) stays allowed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentensemble.errors import ConfigurationError

FORK_ATTRIBUTE = "agentensemble_fork"  # a fork's record in its run's attributes (_forks.py)


def run_arguments(status: Any) -> Sequence[Any]:
    """The arguments ``(ensemble name, inputs)`` a DBOS workflow status runs with, or (): the
    recorded ones, with a fork's new inputs (kept in its record) instead of its parent's."""
    inputs = getattr(status, "input", None)
    args = getattr(inputs, "args", None)
    if args is None and isinstance(inputs, dict):
        args = inputs.get("args")
    found = tuple(args or ())
    replaced = fork_inputs(getattr(status, "attributes", None))
    if replaced is not None and found:
        return (found[0], replaced, *found[2:])
    return found


def fork_inputs(attributes: Any) -> dict[str, Any] | None:
    """The inputs a fork runs with instead of its parent's, from its attributes (None: the
    recorded ones)."""
    record = attributes.get(FORK_ATTRIBUTE) if isinstance(attributes, dict) else None
    found = record.get("inputs") if isinstance(record, dict) else None
    return found if isinstance(found, dict) else None


def refuse_changed_reuse(
    found: Sequence[Any], run_id: str, name: str, inputs: Mapping[str, Any] | None
) -> None:
    """Raise ``ConfigurationError`` when ``found`` (the run recorded under ``run_id``, if any)
    ran another ensemble or other inputs. Names what differs; never shows input values."""
    if not found:
        return
    args = run_arguments(found[0])
    if not args:
        return  # recorded without its arguments: nothing to compare
    old_name = args[0]
    old_inputs = _comparable(args[1] if len(args) > 1 else {})
    new_inputs = _comparable(dict(inputs or {}))
    differences = []
    if old_name != name:
        differences.append(f"it ran ensemble {old_name!r}, not {name!r}")
    if old_inputs != new_inputs:
        old_keys, new_keys = set(old_inputs), set(new_inputs)
        changed = sorted(
            (old_keys ^ new_keys)
            | {k for k in old_keys & new_keys if old_inputs[k] != new_inputs[k]}
        )
        differences.append(f"its inputs differ in {', '.join(map(repr, changed))}")
    if differences:
        raise ConfigurationError(
            f"run id {run_id!r} is already taken by another run: {'; '.join(differences)}. "
            "A run id names one run (reuse it only to resume or read that run): choose a new id"
        )


def _comparable(inputs: Any) -> dict[str, Any]:
    """Inputs as they compare after a round trip through the database (tuples become lists)."""
    loaded = json.loads(json.dumps(inputs, default=str, sort_keys=True))
    return loaded if isinstance(loaded, dict) else {"": loaded}


__all__ = ["FORK_ATTRIBUTE", "fork_inputs", "refuse_changed_reuse", "run_arguments"]
