"""Run by test_a2a_durable.py in a fresh process (DBOS is process-global): an ensemble served
as an A2A agent whose tasks are durable runs of a DurableRuntime on SQLite. Prints what the
test checks."""

from __future__ import annotations

import asyncio
import sys

import httpx
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import new_text_message
from a2a.types.a2a_pb2 import Role, SendMessageRequest, TaskState

from agentensemble import Agent, Ensemble, Task
from agentensemble.durable import DurableRuntime
from agentensemble.errors import ConfigurationError
from agentensemble.serve import a2a_app
from agentensemble.testing import FunctionChatModel

URL = "http://127.0.0.1:8768/"


def build() -> Ensemble:
    agent = Agent(
        role="Writer",
        goal="Explain {topic}",
        llm=FunctionChatModel(lambda m, t: "durable a2a answer"),
    )
    return Ensemble(tasks=[Task(description="Explain {topic}.", agent=agent)])


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
    runtime = DurableRuntime(f"sqlite:///{sys.argv[1]}/runs.sqlite")
    runtime.register("explainer", build)
    runtime.launch()
    try:
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
