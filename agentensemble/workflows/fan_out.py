"""``Task(for_each="items")``: one run of the task per item of a list input, as one step.

Items run concurrently, at most ``max_concurrency`` at once (the ensemble's; no cap when it has
none), each with ``{item}`` and ``{index}`` (0-based) filled. Their outputs come back in item
order, and a later step's ``context`` naming the task gets all of them (map, then reduce). Each
item is a task run of its own (its own ``task_index``, events, review gates, trace entry). A
failing item cancels the others and fails the run, keeping every completed output.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any

from agentensemble.outputs import TaskOutput
from agentensemble.workflows.base import PreparedTask
from agentensemble.workflows.step import StepCall, StepResult
from agentensemble.workflows.task_step import run_task


@dataclass
class FanOutStep:
    """A task prepared once per item (``items[i]`` fills ``{item}``; ``{index}`` is ``i``)."""

    task: Any
    items: list[PreparedTask]
    limit: int | None = None

    @property
    def source(self) -> Any:
        return self.task

    @property
    def capacity(self) -> int:
        return len(self.items)

    async def run(self, call: StepCall) -> StepResult:
        if not self.items:
            return StepResult()
        gate = asyncio.Semaphore(self.limit or len(self.items))
        # an item is revised against what sent the run back, not another item's answer
        item_call = call
        if call.feedback is not None:
            item_call = replace(call, feedback=replace(call.feedback, previous=None))

        label = getattr(self.task, "label", "")

        async def one(position: int, item: PreparedTask) -> tuple[TaskOutput, bool]:
            within = (*item_call.within, f"for_each:{label}:{position}")
            async with gate:
                return await run_task(
                    item, call.base + position + 1, replace(item_call, within=within)
                )

        running = [asyncio.ensure_future(one(i, item)) for i, item in enumerate(self.items)]
        try:
            await asyncio.wait(running, return_when=asyncio.FIRST_EXCEPTION)
            for task in running:  # the first failing item in item order
                if task.done() and not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
        finally:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
        results = [task.result() for task in running]
        indices = [call.base + i + 1 for i in range(len(self.items))]
        return StepResult([o for o, _ in results], any(stop for _, stop in results), indices)


def item_text(value: Any) -> str:
    """How an item fills ``{item}``: text as it is, anything else as JSON (else ``str``)."""
    if isinstance(value, str):
        return value
    import json

    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


__all__ = ["FanOutStep", "item_text"]
