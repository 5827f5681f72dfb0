"""The one error for tools that need a reviewer in a run that has none.

Checked when an Ensemble is built or run, before any model call, in three places: a task's
resolved tools, a task's tool sources (an MCP server with ``requires_approval``, not opened yet),
and the workers of a hierarchical or delegating run. All three say it the same way: where, which
tools, and what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentensemble.errors import ConfigurationError

if TYPE_CHECKING:
    from agentensemble.tools.resolver import ResolvedTools
    from agentensemble.tools.source import ToolSource


def approval_without_reviewer(where: str, names: Sequence[str]) -> ConfigurationError:
    """``where`` (``task 1 ('Publish')``, ``agent 'Writer'``) has tools ``names`` that ask a
    reviewer (approval, or a question for the human), but there is no review handler."""
    return ConfigurationError(
        f"{where}: {', '.join(names)} require approval (or ask the human), but the ensemble has "
        "no review_handler. Pass Ensemble(review_handler=...)"
    )


def gated_tool_names(tools: ResolvedTools) -> list[str]:
    """The names of the resolved tools that ask a reviewer."""
    return [name for name in tools.names if (tool := tools.get(name)) and tool.requires_approval]


def gated_source_name(source: ToolSource) -> str:
    """A tool source asking for approval, by the tools it gates when it lists them (not opened
    yet, so that is all there is to name): ``add, div of MCP server '...'``."""
    listed = getattr(source, "requires_approval", None)
    if isinstance(listed, (list, tuple)) and listed:
        return f"{', '.join(map(str, listed))} of {source.describe()}"
    return f"the tools of {source.describe()}"


__all__ = ["approval_without_reviewer", "gated_source_name", "gated_tool_names"]
