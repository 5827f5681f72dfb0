"""A served call (MCP tool call, A2A task or AG-UI run) as a durable run of a
``DurableRuntime``: it survives a crash of the server and resumes on recovery; a cancelled call
cancels the run."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterable
from typing import Any

from agentensemble.errors import ConfigurationError
from agentensemble.events import EnsembleCompleted, EnsembleListener
from agentensemble.serve._progress import ProgressPump


def check_registered(runtime: Any, names: Iterable[str]) -> None:
    """Every name registered in the runtime, else ``ConfigurationError`` naming the fix."""
    from agentensemble.durable._registry import build

    for key in names:
        try:
            build(key)
        except ConfigurationError as error:
            raise ConfigurationError(
                f"cannot serve {key!r} durably: {error} (runtime.register({key!r}, ...))"
            ) from error


async def run_durably(
    runtime: Any, name: str, inputs: dict[str, Any], pump: ProgressPump | EnsembleListener
) -> Any:
    """The run as a durable run of ``runtime`` (registered as ``name``), under a fresh run id
    (never one a caller chose: it could name another caller's run)."""
    run_id = str(uuid.uuid4())
    output: Any = None
    try:
        async for event in runtime.astream(name, inputs, run_id=run_id):
            pump.on_event(event)
            if isinstance(event, EnsembleCompleted):
                output = event.output
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await asyncio.to_thread(runtime.cancel, run_id)
        raise
    if output is None:  # a run already finished elsewhere streams nothing: ask for its result
        output = await runtime.aresult(run_id)
    return output


__all__ = ["check_registered", "run_durably"]
