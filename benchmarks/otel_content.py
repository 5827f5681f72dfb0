"""What content on spans and typed output as it forms cost.

Usage: ``python benchmarks/otel_content.py``. Prints, per model turn of a tool-calling task
(scripted model, 200 turns, CPU time, medians of interleaved repeats in one process):

- ``OpenTelemetryListener()`` against ``OpenTelemetryListener(include_content=True)`` (spans to
  an in-memory exporter: the listener's own work, no network);
- per streamed answer: ``astream`` of a task with ``output_type`` against the same task without
  one (the typed task also pays its schema in the prompt and the final parse), and the partial
  parsing alone (``PartialParser`` over the answer's pieces: what ``PartialOutput`` costs).
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


ANSWER = (
    '{"title": "'
    + "quarterly review of the sales " * 10
    + '", "score": 8, "tags": '
    + str(["tag" + str(i) for i in range(20)]).replace("'", '"')
    + "}"
)


def otel_per_turn(include_content: bool, turns: int = 200) -> float:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agentensemble import Agent, Ensemble, Task, tool
    from agentensemble.otel import OpenTelemetryListener
    from agentensemble.testing import ScriptedChatModel, text, tool_call

    @tool
    async def echo(value: str) -> str:
        """Echo a value."""
        return value

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    script = [*(tool_call("echo", {"value": str(i)}) for i in range(turns - 1)), text("done")]
    agent = Agent(role="Bench", goal="g", tools=[echo], llm=ScriptedChatModel(script))
    agent = agent.model_copy(update={"max_iterations": turns})
    listener = OpenTelemetryListener(provider, include_content=include_content)
    ensemble = Ensemble(
        tasks=[Task(description="d", agent=agent)], capture="off", listeners=[listener]
    )
    gc.collect()
    cpu = time.process_time()
    ensemble.run()
    return (time.process_time() - cpu) / turns


def stream_per_answer(typed: bool, answers: int = 50) -> float:
    from pydantic import BaseModel

    from agentensemble import Agent, Ensemble, Task
    from agentensemble.testing import ScriptedChatModel

    class Report(BaseModel):
        title: str
        score: int
        tags: list[str]

    async def go() -> None:
        for _ in range(answers):
            model = ScriptedChatModel([ANSWER])
            agent = Agent(role="A", goal="g", llm=model)
            task = Task(description="d", agent=agent, output_type=Report if typed else None)
            async for _event in Ensemble(tasks=[task], capture="off").astream():
                pass

    gc.collect()
    cpu = time.process_time()
    asyncio.run(go())
    return (time.process_time() - cpu) / answers


def parser_per_answer(repeats: int = 200) -> float:
    """The partial parsing alone: one answer's word-sized pieces through ``PartialParser``."""
    from pydantic import BaseModel

    from agentensemble.execution.structured import PartialParser
    from agentensemble.llm.streaming import stream_pieces

    class Report(BaseModel):
        title: str
        score: int
        tags: list[str]

    pieces = stream_pieces(ANSWER)
    cpu = time.process_time()
    for _ in range(repeats):
        parser = PartialParser(Report)
        for piece in pieces:
            parser.feed(piece)
        parser.flush()
    return (time.process_time() - cpu) / repeats


def median_pair(measure: Any, repeats: int) -> tuple[float, float]:
    off: list[float] = []
    on: list[float] = []
    measure(False), measure(True)  # warm up: imports, caches
    for _ in range(repeats):
        off.append(measure(False))
        on.append(measure(True))
    return statistics.median(off), statistics.median(on)


def main() -> None:
    off, on = median_pair(otel_per_turn, 7)
    print(
        f"otel per model turn: off {off * 1e6:.0f} us, include_content {on * 1e6:.0f} us, "
        f"ratio {on / off:.2f}"
    )
    plain, typed = median_pair(stream_per_answer, 5)
    print(
        f"astream per answer ({len(ANSWER)} chars of JSON, word by word): untyped task "
        f"{plain * 1e3:.2f} ms, typed task {typed * 1e3:.2f} ms (schema in the prompt, final "
        f"parse and PartialOutput), ratio {typed / plain:.2f}"
    )
    parser = statistics.median(parser_per_answer() for _ in range(5))
    print(f"PartialParser alone, per answer: {parser * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
