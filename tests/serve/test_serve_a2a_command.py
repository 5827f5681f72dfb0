"""``agentensemble serve-a2a`` as a subprocess, called with the official ``a2a-sdk`` client (and
raw HTTP for the refusals); the crew's model is the local OpenAI-compatible server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import new_data_part, new_message, new_text_message
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from serve_helpers import KEY, crew_file, model_env, serving

from agentensemble.testing import OpenAICompatibleServer

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

WAIT = 60.0
TOKEN = "an-a2a-token-long-enough"
TWO_INPUTS = """\
model: openai/test-model
tasks:
  pitch:
    description: Pitch {product} to {audience}.
    expected_output: One sentence.
"""


@pytest.fixture
def model_server() -> Any:
    with OpenAICompatibleServer() as server:
        yield server


async def send(
    base: str, message: Any, *, streaming: bool = False, headers: dict[str, str] | None = None
) -> list[StreamResponse]:
    async with httpx.AsyncClient(timeout=30, headers=headers) as http:
        config = ClientConfig(httpx_client=http, streaming=streaming)
        client = await create_client(base, client_config=config)
        return [event async for event in client.send_message(SendMessageRequest(message=message))]


def user_text(text: str) -> Any:
    return new_text_message(text, role=Role.ROLE_USER)


def artifact_text(task: Any) -> str:
    return "".join(part.text for artifact in task.artifacts for part in artifact.parts)


async def test_the_card_names_skills_from_the_tasks_and_no_secrets(
    tmp_path: Path, model_server: OpenAICompatibleServer
) -> None:
    env = model_env(model_server.base_url)
    with serving(["serve-a2a", str(crew_file(tmp_path))], env) as base:
        async with httpx.AsyncClient(timeout=10) as http:
            card = (await http.get(f"{base}/.well-known/agent-card.json")).json()
    assert card["name"] == "writer"
    assert [skill["id"] for skill in card["skills"]] == ["research", "write"]
    assert card["supportedInterfaces"][0]["url"] == f"{base}/"
    assert card["capabilities"]["streaming"] is True
    text = str(card)
    assert KEY not in text and "test-model" not in text and model_server.base_url not in text


async def test_a_plain_text_message_fills_the_one_variable_and_completes_with_an_artifact(
    tmp_path: Path, model_server: OpenAICompatibleServer
) -> None:
    model_server.push_text("Facts about tides.")
    model_server.push_text("Tides, explained.")
    with serving(["serve-a2a", str(crew_file(tmp_path))], model_env(model_server.base_url)) as base:
        with anyio.fail_after(WAIT):
            (event,) = await send(base, user_text("tides"))
            async with httpx.AsyncClient(timeout=30) as http:
                config = ClientConfig(httpx_client=http, streaming=False)
                client = await create_client(base, client_config=config)
                fetched = await client.get_task(GetTaskRequest(id=event.task.id))
    assert event.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert artifact_text(event.task) == "Tides, explained."
    assert fetched.status.state == TaskState.TASK_STATE_COMPLETED
    assert artifact_text(fetched) == "Tides, explained."
    assert "Research tides." in str(model_server.requests[0]["messages"])


async def test_streaming_reports_working_per_task_then_the_artifact_then_completed(
    tmp_path: Path, model_server: OpenAICompatibleServer
) -> None:
    model_server.push_text("Facts.")
    model_server.push_text("Streamed answer.")
    with serving(["serve-a2a", str(crew_file(tmp_path))], model_env(model_server.base_url)) as base:
        with anyio.fail_after(WAIT):
            events = await send(base, user_text("streams"), streaming=True)
    states = [
        TaskState.Name(e.status_update.status.state) for e in events if e.HasField("status_update")
    ]
    said = [
        e.status_update.status.message.parts[0].text
        for e in events
        if e.HasField("status_update") and e.status_update.status.message.parts
    ]
    artifacts = [e.artifact_update for e in events if e.HasField("artifact_update")]
    assert states[0] == "TASK_STATE_WORKING" and states[-1] == "TASK_STATE_COMPLETED"
    assert "task 1/2 started: Research streams." in said and "task 2/2 done" in said
    assert artifacts[0].artifact.parts[0].text == "Streamed answer."


async def test_several_inputs_come_as_a_data_part_and_plain_text_is_rejected(
    tmp_path: Path, model_server: OpenAICompatibleServer
) -> None:
    model_server.push_text("Buy it.")
    crew = crew_file(tmp_path, TWO_INPUTS, "pitch.yaml")
    with serving(["serve-a2a", str(crew)], model_env(model_server.base_url)) as base:
        with anyio.fail_after(WAIT):
            (rejected,) = await send(base, user_text("a kettle"))
            data = new_data_part({"product": "a kettle", "audience": "cooks"})
            (done,) = await send(base, new_message([data], role=Role.ROLE_USER))
    assert rejected.task.status.state == TaskState.TASK_STATE_REJECTED
    reason = rejected.task.status.message.parts[0].text
    assert "needs 2 inputs (product, audience)" in reason
    assert done.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert len(model_server.requests) == 1  # the rejected message made no model request
    assert "Pitch a kettle to cooks." in str(model_server.requests[0]["messages"])


async def test_a_failed_run_is_a_failed_task_with_the_error_and_without_the_key(
    tmp_path: Path, model_server: OpenAICompatibleServer
) -> None:
    for _ in range(6):
        model_server.push_fault(401, body=f'{{"error": "bad key {KEY}"}}')
    with serving(["serve-a2a", str(crew_file(tmp_path))], model_env(model_server.base_url)) as base:
        with anyio.fail_after(WAIT):
            (event,) = await send(base, user_text("tides"))
    assert event.task.status.state == TaskState.TASK_STATE_FAILED
    text = str(event.task)
    assert "Error" in event.task.status.message.parts[0].text and KEY not in text


async def test_cancel_task_cancels_the_run(
    tmp_path: Path, model_server: OpenAICompatibleServer
) -> None:
    model_server.push_text("never seen", delay=30)
    with serving(["serve-a2a", str(crew_file(tmp_path))], model_env(model_server.base_url)) as base:
        with anyio.fail_after(WAIT):
            async with httpx.AsyncClient(timeout=30) as http:
                config = ClientConfig(httpx_client=http, streaming=True)
                client = await create_client(base, client_config=config)
                stream: AsyncIterator[StreamResponse] = client.send_message(
                    SendMessageRequest(message=user_text("slow"))
                )
                task_id = ""
                async for event in stream:
                    if event.HasField("task"):
                        task_id = event.task.id
                    if event.HasField("status_update") and "started" in str(event):
                        break
                model_server.wait_for_requests(1, timeout=10)
                canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
                await stream.aclose()  # type: ignore[attr-defined]
                for _ in range(100):
                    fetched = await client.get_task(GetTaskRequest(id=task_id))
                    if fetched.status.state == TaskState.TASK_STATE_CANCELED:
                        break
                    await asyncio.sleep(0.05)
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert fetched.status.state == TaskState.TASK_STATE_CANCELED


async def test_refusals_foreign_host_big_body_missing_token(
    tmp_path: Path, model_server: OpenAICompatibleServer
) -> None:
    model_server.push_text("Facts.")
    model_server.push_text("With a token.")
    env = model_env(model_server.base_url, AGENTENSEMBLE_SERVE_TOKEN=TOKEN)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with serving(["serve-a2a", str(crew_file(tmp_path))], env) as base:
        async with httpx.AsyncClient(timeout=10) as raw:
            card = await raw.get(f"{base}/.well-known/agent-card.json")  # public
            body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
            no_token = await raw.post(f"{base}/", json=body)
            foreign = await raw.post(f"{base}/", json=body, headers={**auth, "Host": "evil.test"})
            big = await raw.post(f"{base}/", content=b"{" * (2 * 1024 * 1024), headers=auth)
        with anyio.fail_after(WAIT):
            (event,) = await send(base, user_text("auth"), headers=auth)
    assert card.status_code == 200
    assert no_token.status_code == 401 and TOKEN not in no_token.text
    assert foreign.status_code == 421
    assert big.status_code == 413
    assert artifact_text(event.task) == "With a token."
