"""``PartialOutput`` over real HTTP: a typed task streamed through litellm (``stream=True``)
from the local server, with the schema sent natively (JSON mode), and a stream broken mid-way
that starts the partials over."""

from __future__ import annotations

from typing import Any

import pytest
from openai_server import OpenAIServer
from pydantic import BaseModel

from agentensemble import (
    LLM,
    Agent,
    Ensemble,
    PartialOutput,
    RetryPolicy,
    StreamRestarted,
    Task,
    TaskCompleted,
)

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.usefixtures("model_lane")]

FAST = RetryPolicy(max_attempts=3, initial_backoff=0.001, max_backoff=0.01, jitter=0)
ANSWER = '{"title": "Typed report", "score": 5, "tags": ["q3", "sales"]}'


class Report(BaseModel):
    title: str
    score: int
    tags: list[str]


async def collect(server: OpenAIServer) -> list[Any]:
    # gpt-4o-mini: litellm says it takes a JSON-schema response_format (the JSON-mode route)
    llm = LLM("openai/gpt-4o-mini", api_base=server.base_url, api_key="sk-e2e-x", retry_policy=FAST)
    agent = Agent(role="Analyst", goal="Report", llm=llm)
    task = Task(description="Write the report", agent=agent, output_type=Report, name="report")
    return [event async for event in Ensemble(tasks=[task]).astream()]


async def test_the_typed_answer_forms_field_by_field(openai_server: OpenAIServer) -> None:
    openai_server.push_text(ANSWER)

    events = await collect(openai_server)

    (request,) = openai_server.requests
    assert request["stream"] is True and request["response_format"]["type"] == "json_schema"
    seen = [e.partial for e in events if isinstance(e, PartialOutput)]
    assert seen[0] == {"title": "Typed"}
    assert {"title": "Typed report", "score": 5} in seen
    assert seen[-1] == {"title": "Typed report", "score": 5, "tags": ["q3", "sales"]}
    assert {e.task_name for e in events if isinstance(e, PartialOutput)} == {"report"}
    completed = next(e for e in events if isinstance(e, TaskCompleted))
    assert completed.output.parsed == Report(title="Typed report", score=5, tags=["q3", "sales"])


async def test_a_broken_stream_starts_the_partials_over(openai_server: OpenAIServer) -> None:
    openai_server.push_fault(kind="stream_break", body='{"title": "Typed report", "sc')
    openai_server.push_text(ANSWER)

    events = await collect(openai_server)

    kinds = [type(e) for e in events]
    restart = kinds.index(StreamRestarted)
    before = [e.partial for e in events[:restart] if isinstance(e, PartialOutput)]
    after = [e.partial for e in events[restart:] if isinstance(e, PartialOutput)]
    assert before[-1] == {"title": "Typed report"}
    assert after[0] == {"title": "Typed"}  # the retried stream's own fields, from the start
    assert after[-1] == {"title": "Typed report", "score": 5, "tags": ["q3", "sales"]}
