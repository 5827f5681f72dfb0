"""LLM(rate_limit=...) through litellm against the local server: one bucket per LLM object,
shared by every task using it; the spacing is read from the server's own clock."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from openai_server import OpenAIServer, Reply, TextReply

from agentensemble import LLM, Agent, Ensemble, RateLimit, Task, Workflow

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


def limited_llm(server: OpenAIServer, per_minute: float) -> LLM:
    return LLM(
        model="openai/test-model",
        api_base=server.base_url,
        api_key="sk-e2e-rate",
        timeout=10.0,
        rate_limit=RateLimit(requests_per_minute=per_minute),
    )


def stamping(starts: list[float]) -> Any:
    lock = threading.Lock()

    def responder(body: dict[str, Any]) -> Reply:
        with lock:
            starts.append(time.monotonic())
        return TextReply("done")

    return responder


async def warm_up(server: OpenAIServer) -> None:
    """One call on an unlimited LLM: litellm's first import (a second or more) happens now,
    not between the bucket's wait and the request it spaces."""
    unlimited = LLM(model="openai/test-model", api_base=server.base_url, api_key="sk-e2e-rate")
    server.push_text("warm")
    await unlimited.complete([{"role": "user", "content": "warm up"}])


async def test_agents_sharing_one_llm_share_its_bucket(openai_server: OpenAIServer) -> None:
    await warm_up(openai_server)
    starts: list[float] = []
    openai_server.set_responder(stamping(starts))
    llm = limited_llm(openai_server, per_minute=60)  # one a second, a burst of one
    agents = [Agent(role=f"Worker {i}", goal="work", llm=llm) for i in range(2)]
    tasks = [Task(description=f"job {i}", agent=agents[i % 2]) for i in range(3)]

    result = await Ensemble(tasks=tasks, workflow=Workflow.PARALLEL).arun()

    assert [o.raw for o in result.task_outputs] == ["done"] * 3
    # the bucket releases at 0, 1 and 2 s; the server sees each a little later (slack: 0.3 s
    # for one request's way there being slower than another's); unlimited, all within ~0.05 s
    offsets = sorted(start - starts[0] for start in starts)
    assert offsets[1] >= 0.7 and offsets[2] >= 1.7, offsets
    assert offsets[2] < 2.0 + 5.0  # and no runaway wait


async def test_a_call_cancelled_while_waiting_never_reaches_the_server(
    openai_server: OpenAIServer,
) -> None:
    openai_server.set_responder(lambda body: TextReply("done"))
    llm = limited_llm(openai_server, per_minute=1)  # the next call would wait a minute
    message = [{"role": "user", "content": "hello"}]
    assert (await llm.complete(message)).content == "done"

    waiting = asyncio.ensure_future(llm.complete(message))
    await asyncio.sleep(0.05)  # let it reach the bucket; it must still be waiting
    assert not waiting.done()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(waiting, 5.0)

    assert len(openai_server.arrivals) == 1
