"""A served crew asks for what its run needs: the list of a ``for_each`` task (an array of
strings), never ``{item}`` / ``{index}``, and the variables of tasks inside loops, graphs and
nested ensembles; a list argument is bounded like a text one. MCP through the real ``mcp``
client, A2A through the ``a2a-sdk`` client on the app in process."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import new_data_part, new_message, new_text_message
from a2a.types.a2a_pb2 import Role, SendMessageRequest, TaskState
from mcp import Client

from agentensemble import Agent, Edge, Ensemble, Graph, Loop, Task
from agentensemble.serve import a2a_app, mcp_server
from agentensemble.serve._shape import (
    MAX_ARGUMENT_CHARS,
    MAX_LIST_ITEMS,
    BadArguments,
    check_arguments,
    input_kinds,
    input_schema,
)
from agentensemble.testing import FunctionChatModel, ScriptedChatModel

pytestmark = pytest.mark.anyio

WAIT = 20.0  # seconds: every call is bounded
URL = "http://127.0.0.1:8769/"


def summariser(llm: Any = None) -> Ensemble:
    """Summarise each document for an audience, then merge the summaries."""
    reader = Agent(role="Reader", goal="Summarise for {audience}", llm=llm)
    each = Task(
        name="summarise",
        description="Summarise document {index}: {item}",
        expected_output="One line",
        agent=reader,
        for_each="docs",
    )
    merge = Task(
        name="merge",
        description="Merge the summaries",
        expected_output="A paragraph",
        agent=Agent(role="Editor", goal="Merge", llm=llm),
        context=[each],
    )
    return Ensemble(tasks=[each, merge])


def echoing_model() -> FunctionChatModel:
    """Answers each item with the document it was given, and the merge with every line."""

    def answer(messages: list[dict[str, Any]], tools: Any) -> str:
        prompt = messages[-1]["content"]
        if "Merge the summaries" in prompt:
            return "merged: " + " | ".join(
                line for line in prompt.splitlines() if line.startswith("about ")
            )
        task = prompt.split("## Task\n", 1)[1].splitlines()[0]
        return "about " + task.split(": ", 1)[1]

    return FunctionChatModel(answer)


def test_a_for_each_crew_asks_for_its_list_and_never_for_item_or_index() -> None:
    crew = summariser(ScriptedChatModel([]))
    assert input_kinds(crew) == {"docs": "list", "audience": "text"}
    schema = input_schema(crew)
    assert schema["required"] == ["docs", "audience"]
    assert schema["additionalProperties"] is False
    docs = schema["properties"]["docs"]
    assert docs["type"] == "array"
    assert docs["items"] == {"type": "string", "maxLength": MAX_ARGUMENT_CHARS}
    assert docs["maxItems"] == MAX_LIST_ITEMS
    assert "one run of task 'summarise' per item" in docs["description"]
    assert schema["properties"]["audience"]["type"] == "string"


def test_item_outside_a_fan_out_is_still_an_input() -> None:
    """{item} in a task without for_each is not filled by any fan-out: the caller sends it."""
    crew = Ensemble(
        tasks=[Task(description="Check {item}", expected_output="ok")],
        llm=ScriptedChatModel([]),
    )
    assert input_kinds(crew) == {"item": "text"}


def test_the_tasks_inside_loops_graphs_and_nested_ensembles_are_asked_for() -> None:
    llm = ScriptedChatModel([])
    loop = Loop(
        name="polish",
        body=[Task(description="Polish the {genre} draft", expected_output="A draft")],
        max_iterations=2,
    )
    graph = Graph(
        name="route",
        start="triage",
        states={"triage": Task(description="Triage for {team}", expected_output="A team")},
        edges=[Edge("triage", Graph.END)],
    )
    inner = Ensemble(
        name="inner",
        tasks=[
            Task(
                description="Check section {item}",
                expected_output="ok",
                agent=Agent(role="Checker", goal="Check against {standard}"),
                for_each="sections",
            )
        ],
    )
    crew = Ensemble(
        tasks=[Task(description="Plan {topic}", expected_output="A plan"), loop, graph, inner],
        llm=llm,
    )
    assert input_kinds(crew) == {
        "topic": "text",
        "genre": "text",
        "team": "text",
        "sections": "list",
        "standard": "text",
    }
    assert input_schema(crew)["properties"]["genre"]["description"] == (
        "fills {genre} in task 'Polish the {genre} draft'"
    )


@pytest.mark.parametrize(
    ("docs", "problem"),
    [
        ("one text", "argument 'docs' must be a list of strings, got str"),
        ({"a": "b"}, "argument 'docs' must be a list of strings, got dict"),
        (["fine", 3], "item 'docs[1]' must be a string, got int"),
        (["x" * (MAX_ARGUMENT_CHARS + 1)], "item 'docs[0]' is 100001 characters long"),
        (["x"] * (MAX_LIST_ITEMS + 1), f"has {MAX_LIST_ITEMS + 1} items; the limit is"),
    ],
)
def test_a_bad_list_argument_is_named(docs: object, problem: str) -> None:
    kinds = {"docs": "list", "audience": "text"}
    with pytest.raises(BadArguments) as caught:
        check_arguments(kinds, {"docs": docs, "audience": "kids"})
    assert problem in str(caught.value)
    assert len(str(caught.value)) < 300  # a hostile list is not echoed back


def test_a_good_list_argument_passes_as_a_list() -> None:
    kinds = {"docs": "list", "audience": "text"}
    given = {"docs": ["a", "b"], "audience": "kids"}
    assert check_arguments(kinds, given) == given
    assert check_arguments(kinds, {"docs": [], "audience": "kids"})["docs"] == []


async def test_mcp_lists_the_list_input_and_a_call_runs_one_task_per_item() -> None:
    model = echoing_model()
    server = mcp_server({"summarise": lambda: summariser(model)})
    with anyio.fail_after(WAIT):
        async with Client(server) as client:
            (listed,) = (await client.list_tools()).tools
            result = await client.call_tool(
                "summarise", {"docs": ["tides", "moons"], "audience": "kids"}
            )
    assert listed.input_schema["required"] == ["docs", "audience"]
    assert listed.input_schema["properties"]["docs"]["type"] == "array"
    assert "item" not in listed.input_schema["properties"]
    assert not result.is_error, result.content
    assert result.content == [
        types.TextContent(text="merged: about tides | about moons"),
    ]


async def test_mcp_refuses_a_bad_list_before_any_model_request() -> None:
    calls: list[object] = []

    def model(messages: list[dict[str, Any]], tools: Any) -> str:
        calls.append(messages)
        return "never"

    server = mcp_server({"summarise": lambda: summariser(FunctionChatModel(model))})
    with anyio.fail_after(WAIT):
        async with Client(server) as client:
            as_text = await client.call_tool("summarise", {"docs": "tides", "audience": "kids"})
            old_shape = await client.call_tool(
                "summarise", {"item": "tides", "index": "0", "audience": "kids"}
            )
    assert as_text.is_error
    assert "argument 'docs' must be a list of strings, got str" in str(as_text.content)
    assert old_shape.is_error
    assert "missing argument(s): docs" in str(old_shape.content)
    assert "unknown argument(s): 'index', 'item'" in str(old_shape.content)
    assert calls == []


async def _send(app: Any, message: Any) -> Any:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=URL.rstrip("/")) as http:
        config = ClientConfig(httpx_client=http, streaming=False)
        client = await create_client(URL, client_config=config)
        events = [e async for e in client.send_message(SendMessageRequest(message=message))]
    return events[-1].task


async def test_a2a_takes_the_list_in_a_data_part_and_rejects_plain_text() -> None:
    model = echoing_model()
    app = a2a_app(lambda: summariser(model), name="summarise", description="Summarises", url=URL)
    data = new_data_part({"docs": ["tides", "moons"], "audience": "kids"})
    with anyio.fail_after(WAIT):
        done = await _send(app, new_message([data], role=Role.ROLE_USER))
        rejected = await _send(app, new_text_message("tides", role=Role.ROLE_USER))
        bad = new_data_part({"docs": "tides", "audience": "kids"})
        refused = await _send(app, new_message([bad], role=Role.ROLE_USER))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    answer = "".join(part.text for artifact in done.artifacts for part in artifact.parts)
    assert answer == "merged: about tides | about moons"
    assert rejected.status.state == TaskState.TASK_STATE_REJECTED
    reason = rejected.status.message.parts[0].text
    assert "needs 2 inputs (docs, audience) (docs: a list of texts)" in reason
    assert '"docs": ["...", "..."]' in reason
    assert refused.status.state == TaskState.TASK_STATE_REJECTED
    assert "must be a list of strings" in refused.status.message.parts[0].text


async def test_a2a_plain_text_never_fills_a_lone_list_input() -> None:
    crew = Ensemble(
        tasks=[Task(description="Read {item}", expected_output="ok", for_each="docs")],
        llm=ScriptedChatModel([]),
    )
    app = a2a_app(crew, name="reader", description="Reads", url=URL)
    with anyio.fail_after(WAIT):
        rejected = await _send(app, new_text_message("tides", role=Role.ROLE_USER))
    assert rejected.status.state == TaskState.TASK_STATE_REJECTED
    assert "needs an input (docs) (docs: a list of texts)" in rejected.status.message.parts[0].text
