"""The layout of a task's user prompt, as far as layers below the executor need to know it.

``execution/prompts.py`` builds prompts; the trace recorder only looks for where one prompt's
start is shared with an earlier one (a chain: every earlier output, then one more). What both
need lives here, below both, so that tracing does not import the executor's layer.
"""

from __future__ import annotations

CONTEXT_HEADING = "## Context"
TASK_HEADING = "\n\n## Task\n"
"""What follows a prompt's context sections (``build_user_prompt``): see ``context_end``."""


def context_end(prompt: str) -> int:
    """Where the context sections of a ``build_user_prompt`` prompt end: the next task of a
    chain starts with the same text up to there (then its newest output's section). The trace
    stores a prompt as that start of an earlier one plus the rest (``trace_model.py``); the
    place is a guess the trace checks, so a description holding the heading costs nothing but
    the sharing. ``-1`` for a prompt with no context."""
    if not prompt.startswith(CONTEXT_HEADING):
        return -1
    return prompt.rfind(TASK_HEADING)


__all__ = ["CONTEXT_HEADING", "TASK_HEADING", "context_end"]
