"""``ToolPolicy``: a default timeout, retries and bound on calls at once for many tools at once
(an agent's, an ensemble's, an MCP server's), below what a tool sets for itself.

Precedence, setting by setting: the tool's own (``@tool(timeout=...)``, an ``AgentTool``
attribute, an MCP server's ``tool_policies`` entry), then its source's (an MCP server's
``tool_policy``), then the agent's ``tool_policy``, then the ensemble's. A setting left None is
taken from the next one down; nothing set anywhere: no timeout, no retries, no bound.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator


def policy_problem(field: str, value: Any) -> str | None:
    """Why ``value`` cannot be the ``field`` setting of a tool policy (None: it can)."""
    if value is None:
        return None
    if field == "timeout":
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value <= 0
        ):
            return f"timeout must be a number of seconds more than 0 (or None); got {value!r}"
    elif field == "retries":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"retries must be a whole number, 0 or more (or None); got {value!r}"
    elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return f"max_concurrency must be a whole number, 1 or more (or None); got {value!r}"
    return None


class ToolPolicy(BaseModel):
    """Default execution settings for a group of tools: ``Agent(tool_policy=...)``,
    ``Ensemble(tool_policy=...)``, ``MCPServerStdio(tool_policy=..., tool_policies={...})``.

    Each setting means what the tool's own setting of that name means (docs/tools.md); None
    leaves it to the next policy down. A tool's own setting always wins.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    timeout: float | None = None
    """Seconds one run of a tool's body may take."""
    retries: int | None = None
    """Runs of the body again after it raised unexpectedly or timed out (never a gated tool's)."""
    max_concurrency: int | None = None
    """Bodies of one tool running at once across the run (each tool counted on its own)."""

    @field_validator("timeout", "retries", "max_concurrency", mode="before")
    @classmethod
    def _usable(cls, value: Any, info: Any) -> Any:
        problem = policy_problem(str(info.field_name), value)
        if problem:
            raise ValueError(problem)
        return value

    def over(self, below: ToolPolicy | None) -> ToolPolicy:
        """This policy, its unset settings taken from ``below``."""
        if below is None:
            return self
        return ToolPolicy(
            timeout=self.timeout if self.timeout is not None else below.timeout,
            retries=self.retries if self.retries is not None else below.retries,
            max_concurrency=(
                self.max_concurrency if self.max_concurrency is not None else below.max_concurrency
            ),
        )

    @property
    def is_empty(self) -> bool:
        """Nothing set: the policy changes nothing."""
        return self.timeout is None and self.retries is None and self.max_concurrency is None


def layered(*policies: ToolPolicy | None) -> ToolPolicy | None:
    """``policies``, first one winning setting by setting (None: none sets anything)."""
    merged: ToolPolicy | None = None
    for policy in reversed(policies):
        if policy is not None:
            merged = policy.over(merged)
    return None if merged is None or merged.is_empty else merged


__all__ = ["ToolPolicy", "layered", "policy_problem"]
