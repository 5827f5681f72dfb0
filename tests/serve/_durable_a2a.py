"""Run by test_a2a_durable.py in a fresh process (DBOS is process-global): an ensemble served
as an A2A agent whose tasks are durable runs of a DurableRuntime on SQLite. Prints what the
test checks."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from typing import Any

import httpx
from _durable_app_common import (
    IN_MODEL_TURN,
    answering,
    build_slow,
    launched_runtime,
    status_once_cancelled,
)
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import new_text_message
from a2a.types.a2a_pb2 import CancelTaskRequest, Role, SendMessageRequest, TaskState

from agentensemble import Ensemble
from agentensemble.durable import DurableRuntime
from agentensemble.errors import ConfigurationError
from agentensemble.serve import a2a_app

URL = "http://127.0.0.1:8768/"


def build() -> Ensemble:
    return answering("durable a2a answer")


async def cancel_a_task(runtime: DurableRuntime) -> None:
    """CancelTask while the durable run is in a model turn: the task is canceled and the
    durable run recorded cancelled. Served by uvicorn on 127.0.0.1 (streaming needs a real
    server)."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    app = a2a_app(build_slow, name="slow", description="Slow", url=url, durable=runtime)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    for _ in range(600):  # bounded: 30 s
        if server.started:
            break
        await asyncio.sleep(0.05)
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            client = await create_client(url, client_config=ClientConfig(httpx_client=http))
            message = new_text_message("tides", role=Role.ROLE_USER)
            stream: Any = client.send_message(SendMessageRequest(message=message))
            task_id = ""
            async for event in stream:
                if event.HasField("task"):
                    task_id = event.task.id
                if event.HasField("status_update") and "started" in str(event):
                    break
            print("IN MODEL TURN", await asyncio.to_thread(IN_MODEL_TURN.wait, 60))
            canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
            print("TASK", TaskState.Name(canceled.status.state))
            with contextlib.suppress(Exception):
                await stream.aclose()
        print("SLOW RUN", await status_once_cancelled(runtime, "slow"))
    finally:
        server.should_exit = True
        await serving


async def ask(app: object, text: str) -> None:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url=URL.rstrip("/")) as http:
        config = ClientConfig(httpx_client=http, streaming=False)
        client = await create_client(URL, client_config=config)
        message = new_text_message(text, role=Role.ROLE_USER)
        async for event in client.send_message(SendMessageRequest(message=message)):
            task = event.task
            print("STATE", TaskState.Name(task.status.state))
            print("ANSWER", task.artifacts[0].parts[0].text if task.artifacts else "")


def main() -> None:
    runtime = launched_runtime(sys.argv[1], {"explainer": build, "slow": build_slow})
    try:
        if sys.argv[2:] == ["cancel"]:
            asyncio.run(cancel_a_task(runtime))
            return
        try:
            a2a_app(build, name="unregistered", description="d", url=URL, durable=runtime)
        except ConfigurationError as error:
            print("REFUSED", error)
        app = a2a_app(build, name="explainer", description="Explains", url=URL, durable=runtime)
        asyncio.run(ask(app, "tides"))
        print("RUNS", [(run.ensemble, run.status) for run in runtime.list_runs()])
    finally:
        runtime.shutdown()


if __name__ == "__main__":
    main()
