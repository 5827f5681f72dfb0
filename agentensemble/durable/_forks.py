"""Fork a finished durable run from a task boundary into a new run: time travel.

DBOS copies the parent's checkpoints before the fork point into the new run, so the tasks before
it replay without a model request or a tool call, and the rest runs again. The fork is made on a
queue no worker reads, given its record (parent, fork point) and, optionally, new inputs, and
only then handed to the workers' queue: no worker can start it half made. The parent is never
changed. New inputs are kept in the fork's record (its attributes, as JSON) and the run takes
them instead of the recorded ones as it starts (``run_arguments``, ``fork_inputs``), so nothing
of DBOS's own tables is written here.

A fork may carry an edited output for the task before its fork point: its record keeps the
text (``edited_outputs``, by task, with the parent's own edits of the tasks it still reuses),
and the run reads it once as it starts (``fork_edits``, outside the run's steps) and hands it
downstream instead of that task's recorded output, as a reviewer's Edit would.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from agentensemble.durable import _dbos
from agentensemble.durable._kept import KeptBytes
from agentensemble.durable._retention import FINISHED
from agentensemble.durable._reuse import FORK_ATTRIBUTE, fork_inputs, run_arguments
from agentensemble.durable._run_records import FAILURE_KEY, TASKS_KEY, fork_record
from agentensemble.errors import ConfigurationError

HOLD_QUEUE = "agentensemble-forks-hold"  # no worker reads it: a fork waits here while it is made
TASK_RANGE_BITS = 20  # as in _steps.py: task i numbers its steps from i * 2**20
MAX_EDITED_OUTPUT = 1_000_000  # characters: an edited output is kept in the fork's record


def fork_run(
    client: Any,
    run_id: str,
    *,
    from_task: int,
    new_run_id: str | None,
    inputs: Mapping[str, Any] | None,
    checkpoint_format: str,
    queue_name: str,
    edited_output: str | None = None,
) -> str:
    """Fork ``run_id`` (through a ``DBOSClient``) so tasks before ``from_task`` (1-based) are
    reused and the rest run again, with ``inputs`` if given and task ``from_task - 1``'s output
    replaced by ``edited_output`` if given; the new run's id."""
    from dbos import SetWorkflowID

    if isinstance(from_task, bool) or not isinstance(from_task, int):
        raise ConfigurationError(f"from_task is a task's number, from 1; got {from_task!r}")
    if from_task < 1:
        raise ConfigurationError(f"from_task counts tasks from 1; got {from_task}")
    if edited_output is not None:
        if from_task < 2:
            raise ConfigurationError(
                "edited_output replaces the output of the task before the fork point; a fork "
                "from task 1 has none (fork from task 2 or later)"
            )
        if not isinstance(edited_output, str):
            raise ConfigurationError(
                f"edited_output must be text; got {type(edited_output).__name__}"
            )
        if len(edited_output) > MAX_EDITED_OUTPUT:
            raise ConfigurationError(
                f"edited_output is {len(edited_output)} characters; at most "
                f"{MAX_EDITED_OUTPUT} are kept in a fork's record"
            )
    new_inputs = None if inputs is None else _json_inputs(inputs)
    found = client.list_workflows(workflow_ids=[run_id], load_output=False)
    if not found:
        raise ConfigurationError(f"there is no durable run {run_id!r} to fork")
    parent = found[0]
    if str(parent.status) not in FINISHED:
        raise ConfigurationError(
            f"run {run_id!r} is {parent.status}: fork a finished, failed or stopped run "
            "(cancel it first to fork it now)"
        )
    tasks = task_count(client, parent)
    if tasks is not None and from_task > tasks:
        raise ConfigurationError(
            f"run {run_id!r} has {tasks} task{'' if tasks == 1 else 's'}: fork from task 1 to "
            f"{tasks} (from_task={from_task} would run nothing again)"
        )
    chosen = new_run_id or f"{run_id}-fork-{uuid.uuid4().hex[:8]}"
    if client.list_workflows(workflow_ids=[chosen], load_output=False):
        raise ConfigurationError(f"run id {chosen!r} is already taken: choose another")
    args = run_arguments(parent)
    with SetWorkflowID(chosen):
        client.fork_workflow(
            run_id,
            from_task << TASK_RANGE_BITS,
            application_version=checkpoint_format,
            queue_name=HOLD_QUEUE,
        )
    # it replays the parent's checkpoints: their attachments' bytes are its too (_kept.py)
    KeptBytes(_dbos.client_engine(client)).share(run_id, chosen)
    kept = (fork_record(parent) or {}).get("edited_outputs")  # the parent's, still reused
    edits = {
        task: text
        for task, text in (kept.items() if isinstance(kept, dict) else [])
        if isinstance(text, str) and str(task).isdigit() and int(task) < from_task
    }
    if edited_output is not None:
        edits[str(from_task - 1)] = edited_output
    record: dict[str, Any] = {
        "parent": run_id,
        "from_task": from_task,
        "new_inputs": inputs is not None,
    }
    if edits:
        record["edited_outputs"] = edits
    # the inputs it runs with, when not the recorded ones: the new ones, or the parent's own new
    # ones (a fork of a fork: DBOS copied the recorded inputs, not the parent's record)
    kept_inputs = new_inputs if new_inputs is not None else fork_inputs(parent.attributes)
    if kept_inputs is not None and args:
        record["inputs"] = kept_inputs
    client.update_workflow_attributes(chosen, {**(parent.attributes or {}), FORK_ATTRIBUTE: record})
    client.resume_workflow(chosen, queue_name=queue_name)  # now a worker may take it
    return chosen


def task_count(client: Any, parent: Any) -> int | None:
    """How many tasks finished run ``parent`` has (its task slots, as ``steps`` numbers them),
    as kept with its result or its failure; None for a run that kept none (cancelled before it
    ended, or recorded by an older release)."""
    status = str(parent.status)
    found: Any = None
    if status == "SUCCESS":
        loaded = client.list_workflows(workflow_ids=[parent.workflow_id], load_input=False)
        found = getattr(loaded[0], "output", None) if loaded else None
    elif status == "ERROR":
        found = client.get_event(parent.workflow_id, FAILURE_KEY, timeout_seconds=0)
    count = found.get(TASKS_KEY) if isinstance(found, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) else None


def fork_edits(attributes: dict[str, Any] | None) -> dict[int, str]:
    """The edited outputs a run must hand on instead of its tasks' own, from its attributes
    (empty for a run that is no fork, or a fork without edits), by 1-based task.

    The run reads its attributes once as it starts, outside its steps (``_fresh.py``); a fork's
    record is written before it is queued, so every execution of the run reads the same."""
    found = attributes.get(FORK_ATTRIBUTE) if isinstance(attributes, dict) else None
    edits = found.get("edited_outputs") if isinstance(found, dict) else None
    if not isinstance(edits, dict):
        return {}
    return {
        int(task): text
        for task, text in edits.items()
        if isinstance(text, str) and str(task).isdigit()
    }


def _json_inputs(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """A fork's new inputs as its record keeps them (JSON); refused, naming the input (never its
    value), if one cannot be."""
    kept: dict[str, Any] = {}
    for name, value in dict(inputs).items():
        try:
            kept[str(name)] = json.loads(json.dumps(value, allow_nan=False))
        except (TypeError, ValueError) as error:
            raise ConfigurationError(
                f"a fork's new input {str(name)!r} ({type(value).__name__}) cannot be kept in the "
                f"fork's record, which holds JSON: {type(error).__name__}; pass text, numbers, "
                "booleans, lists or objects of them"
            ) from None
    return kept


__all__ = [
    "FORK_ATTRIBUTE",
    "HOLD_QUEUE",
    "MAX_EDITED_OUTPUT",
    "fork_edits",
    "fork_run",
]
