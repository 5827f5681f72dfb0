"""``Ensemble.astream``: a run's events as an async iterator, model text token by token.

The run goes on in its own asyncio task; a listener puts every event on a queue the iterator
reads, so events arrive as they happen, in order, ending with ``EnsembleCompleted``. A failure
raises from the iterator after the events that led to it. Closing the iterator (``aclose()``,
or leaving ``async with contextlib.aclosing(...)``) cancels the run and waits until it has
stopped; a bare ``break`` only abandons it, and Python closes it later (when it finalizes it).

A typed task's answer also arrives as ``PartialOutput`` events while its JSON streams in
(``partial_outputs``: a sink in front of the run's, set for that task's model calls only).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from agentensemble.events import EnsembleEvent, EnsembleListener, PartialOutput
from agentensemble.execution.structured import PartialParser
from agentensemble.llm.streaming import DeltaSink, current_sink, use_sink
from agentensemble.outputs import EnsembleOutput
from agentensemble.run_context import current_model_call, current_run_id

_DONE = object()

Runner = Callable[[Sequence[EnsembleListener]], Awaitable[EnsembleOutput]]


class _QueueListener:
    """Puts events on the iterator's queue, from the loop's thread or any other."""

    def __init__(self, queue: asyncio.Queue[Any], loop: asyncio.AbstractEventLoop) -> None:
        self._queue = queue
        self._loop = loop
        self._loop_thread = threading.get_ident()

    def on_event(self, event: EnsembleEvent) -> None:
        if threading.get_ident() == self._loop_thread:
            self._queue.put_nowait(event)
        else:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody reads
                self._loop.call_soon_threadsafe(self._queue.put_nowait, event)


class _PartialOutputSink:
    """Passes every piece on to the run's sink, and emits a ``PartialOutput`` each time the
    typed answer's validated fields so far change. A context manager around one model call:
    leaving it, the whole answer is parsed once more (the last pieces may have come between two
    throttled parses), so the last ``PartialOutput`` holds every field of the answer."""

    def __init__(self, inner: DeltaSink, parser: PartialParser, emit: Callable[[Any], None]):
        self._inner = inner
        self._parser = parser
        self._emit = emit
        self._token: Any = None
        reasoning = getattr(inner, "reasoning", None)
        if reasoning is not None:  # the run's sink shows reasoning: keep showing it
            self.reasoning = reasoning

    def __enter__(self) -> None:
        self._token = use_sink(self)
        self._token.__enter__()

    def __exit__(self, kind: object, *_: object) -> None:
        self._token.__exit__(None, None, None)
        if kind is None:
            self._show(self._parser.flush())

    def text(self, piece: str) -> None:
        self._inner.text(piece)
        self._show(self._parser.feed(piece))

    def _show(self, partial: Any) -> None:
        if partial is None:
            return
        scope = current_model_call()
        self._emit(
            PartialOutput(
                current_run_id(),
                scope.task_name if scope else None,
                partial,
                agent_role=scope.agent_role if scope else "",
                call_id=scope.call_id if scope else "",
            )
        )

    def restarted(self, attempt: int) -> None:
        self._parser.restart()
        self._inner.restarted(attempt)


def partial_outputs(
    output_type: Any, emit: Callable[[Any], None] | None
) -> AbstractContextManager[None] | None:
    """For one model call of a typed task in a streaming run: the block's text also becomes
    ``PartialOutput`` events. None (nothing to enter) when nobody streams, the task has no
    ``output_type`` or the type has no partials (a scalar)."""
    sink = current_sink()
    if sink is None or output_type is None or emit is None:
        return None
    parser = PartialParser(output_type)
    if not parser.streams:
        return None
    return _PartialOutputSink(sink, parser, emit)


async def stream_events(run: Runner) -> AsyncIterator[EnsembleEvent]:
    """Start ``run(extra_listeners)`` and yield its events until it ends."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    task = asyncio.ensure_future(run([_QueueListener(queue, loop)]))
    task.add_done_callback(lambda _: queue.put_nowait(_DONE))
    try:
        while True:
            item = await queue.get()
            if item is _DONE:
                break
            yield item
        task.result()  # a failed run raises here, after its events
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def astream(
    execute: Callable[[Mapping[str, Any] | None, Sequence[EnsembleListener], bool], Any],
    inputs: Mapping[str, Any] | None,
) -> AsyncIterator[EnsembleEvent]:
    """The iterator behind ``Ensemble.astream`` (``_run.execute``, bound)."""
    return stream_events(lambda listeners: execute(inputs, listeners, True))


__all__ = ["astream", "partial_outputs", "stream_events"]
