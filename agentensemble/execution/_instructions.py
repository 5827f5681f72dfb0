"""An agent's ``instructions`` function, called at each task start with the run's context."""

from __future__ import annotations

import inspect
from typing import Any

from agentensemble.errors import AgentExecutionError
from agentensemble.run_context import RunContext, current_run_id


async def computed_instructions(task: Any) -> str:
    """Call ``task.instructions`` (sync or async) with the run's context for ``task`` (an
    ``AgentTask``: the executor's module imports this one); its text, or ``AgentExecutionError``
    naming the agent when it raises or answers anything but text."""
    context = RunContext(
        inputs=dict(task.inputs),
        session=getattr(task.memory, "session", None),  # set when the run has a session
        task_name=task.task_name,
        task_description=task.description,
        agent_role=task.role,
        run_id=current_run_id(),
    )
    try:
        text = task.instructions(context)
        if inspect.isawaitable(text):
            text = await text
    except Exception as error:
        raise AgentExecutionError(
            f"Agent {task.role!r}: its instructions function raised {type(error).__name__}: {error}"
        ) from error
    if not isinstance(text, str):
        raise AgentExecutionError(
            f"Agent {task.role!r}: its instructions function must return text; "
            f"got {type(text).__name__}"
        )
    return text


__all__ = ["computed_instructions"]
