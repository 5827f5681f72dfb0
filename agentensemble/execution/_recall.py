"""What memory recalled for a task, put into the conversation and reported as an event."""

from __future__ import annotations

import dataclasses
from typing import Any

from agentensemble.events import EventEmitter, MemoryRetrieved
from agentensemble.llm.types import Message
from agentensemble.task_memory import Recollection


def show_recollection(
    messages: list[Message], recalled: Recollection, task: Any, emitter: EventEmitter
) -> int:
    """Insert session history after the system prompt and retrieved memory as a user-role
    message of untrusted data just before the task prompt (never in the system prompt); emit
    ``MemoryRetrieved``. Returns the index of the task prompt in ``messages``."""
    shown: list[Message] = [dict(message) for message in recalled.history]
    if recalled.context is not None:
        shown.append({"role": "user", "content": recalled.context})
    messages[1:1] = shown
    if emitter:
        emitter.emit(
            MemoryRetrieved(
                agent_role=task.role,
                task_name=task.task_name,
                task_description=task.description,
                query=recalled.query,
                scopes=list(recalled.scopes),
                items=[dataclasses.asdict(item) for item in recalled.items],
                session=recalled.session,
                history_messages=len(recalled.history),
            )
        )
    return 1 + len(shown)


__all__ = ["show_recollection"]
