"""What a run spends, counted: tokens (``TokenUsage``) and where a task's time went
(``TaskMetrics``).

Below both ``outputs`` (a task's and a run's results hold them) and ``trace_model`` (a trace's
tasks hold their metrics), so neither imports the other for them. Both names are public through
``agentensemble`` and ``agentensemble.outputs``.
"""

from __future__ import annotations

import functools

from pydantic import BaseModel, ConfigDict, Field


class TokenUsage(BaseModel):
    """Tokens spent; adds up across calls, tasks and runs."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_prompt_tokens: int = 0  # read from the provider's cache; within prompt_tokens
    cache_write_tokens: int = 0  # written to the provider's cache; within prompt_tokens
    reasoning_tokens: int = 0  # the model's reasoning; within completion_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        # frozen: adding nothing hands back the other side as it is (a scripted or local
        # model reports no usage; a run of one task sums one usage): no new model built
        if type(self) is TokenUsage and type(other) is TokenUsage:
            if not (other.prompt_tokens or other.completion_tokens or other.total_tokens):
                return self
            if not (self.prompt_tokens or self.completion_tokens or self.total_tokens):
                return other
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cached_prompt_tokens=self.cached_prompt_tokens + other.cached_prompt_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


@functools.cache
def no_usage() -> TokenUsage:
    """The zero ``TokenUsage``, built once and shared (the model is frozen): what a model turn
    or a task without reported usage holds. Built on first use, not at import (pydantic builds
    a model's validator on its first instance)."""
    return TokenUsage()


class TaskMetrics(BaseModel):
    """Where a task's time went, and how often its model calls were retried."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    model_seconds: float = Field(default=0.0, description="time in model calls, retries included")
    tool_seconds: float = Field(default=0.0, description="time in tool calls (summed per call)")
    review_wait_seconds: float = Field(default=0.0, description="time waiting for reviewers")
    retries: int = Field(default=0, description="model call attempts beyond the first")


__all__ = ["TaskMetrics", "TokenUsage", "no_usage"]
