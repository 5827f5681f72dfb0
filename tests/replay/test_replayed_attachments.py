"""Attachments over HTTP on recorded OpenAI, Anthropic and Gemini traffic (pydantic-ai's cassettes,
SOURCES.md), both ways out: a task's image and a run input's PDF reach the request as content
parts, the PDF byte for byte as the recorded request sent it; a tool's image goes back as
PydanticAI sent it (text in the tool message, the image in a user message right after); traces
and events show a short description, never the bytes. Through litellm, a PDF reaches Anthropic
as the document block Anthropic's own client sent."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from replay_server import load, model, recorded_request

from agentensemble import Agent, Document, Ensemble, Image, Task, tool
from agentensemble.events import LLMCallStarted

pytestmark = pytest.mark.anyio

GPT = "openai/gpt-4o"
LANES = ["auto", "litellm"]  # "auto" takes the openai lane for an OpenAI model
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


def recorded_pdf() -> bytes:
    """The PDF pydantic-ai's recorded request sent to OpenAI (its ``file_data``)."""
    file = recorded_request("openai/document_input", 0)["messages"][0]["content"][1]["file"]
    return base64.b64decode(file["file_data"].split(",", 1)[1])


def parts(body: Any, role: str = "user") -> list[dict[str, Any]]:
    """The content parts of the last ``role`` message of a request body."""
    message = [m for m in body["messages"] if m["role"] == role][-1]
    return message["content"] if isinstance(message["content"], list) else []


@pytest.mark.parametrize("lane", LANES)
async def test_a_task_image_and_an_input_pdf_go_with_the_request(replay: Any, lane: str) -> None:
    server = replay("openai/document_input")
    reader = Agent(
        role="Reader", goal="Read documents", llm=model(GPT, server, suffix="/v1", lane=lane)
    )
    task = Task(
        description="What is the main content of {invoice}?",
        agent=reader,
        attachments=[Image(data=PNG)],
    )
    seen: list[LLMCallStarted] = []

    output = await Ensemble(tasks=[task], listeners=[Starts(seen)]).arun(
        {"invoice": Document(data=recorded_pdf())}
    )

    assert output.raw == 'The main content of the document is "Dummy PDF file."'
    (request,) = server.requests
    sent = parts(request.body)
    assert sent[0]["type"] == "text" and "main content of [attachment: invoice]?" in sent[0]["text"]
    assert [p["type"] for p in sent[1:]] == ["text", "file", "text", "image_url"]
    assert sent[1]["text"] == "[attachment: invoice]"
    recorded = parts(recorded_request("openai/document_input", 0))[1]["file"]["file_data"]
    assert sent[2]["file"] == {"file_data": recorded, "filename": "invoice"}  # byte for byte
    assert sent[3]["text"] == "[attachment: image]"
    assert sent[4]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    shown = str(seen[0].messages)
    assert "base64" not in shown and "[image: png, 2 kB, sha256:" in shown


class Starts:
    """A listener keeping the model calls' starts."""

    def __init__(self, seen: list[Any]) -> None:
        self.seen = seen

    def on_event(self, event: Any) -> None:
        if isinstance(event, LLMCallStarted):
            self.seen.append(event)


POTATO = load("openai/image_tool_response")["interactions"][1]["request"]["body"]
POTATO_URL = POTATO["messages"][3]["content"][1]["image_url"]["url"]


@tool
def get_image() -> Image:
    """The image to look at."""
    return Image(url=POTATO_URL)


@pytest.mark.parametrize("lane", LANES)
async def test_a_tool_s_image_follows_its_tool_message_as_the_recorded_client_sent_it(
    replay: Any, lane: str
) -> None:
    server = replay("openai/image_tool_response")
    agent = Agent(
        role="Cook",
        goal="Name food",
        tools=[get_image],
        llm=model(GPT, server, suffix="/v1", lane=lane),
    )
    task = Task(
        description="What food is in the image you can get from the get_image tool?", agent=agent
    )

    output = await Ensemble(tasks=[task]).arun()

    assert output.raw == "The image shows a potato."
    second = server.requests[1].body["messages"]
    recorded = POTATO["messages"]
    assert [m["role"] for m in second[-3:]] == [m["role"] for m in recorded[-3:]]
    assert second[-2] == {
        "role": "tool",
        "tool_call_id": "call_4hrT4QP9jfojtK69vGiFCFjG",
        "content": f"[attachment: {POTATO_URL.rsplit('/', 1)[1]}]",
    }
    assert [p["type"] for p in second[-1]["content"]] == ["text", "image_url"]
    assert second[-1]["content"][1] == recorded[-1]["content"][1]  # the image part as recorded
    record = output.task_outputs[0].tool_calls[0]
    assert record.output == second[-2]["content"]


CLAUDE = "anthropic/claude-sonnet-4-5"


async def test_a_pdf_reaches_anthropic_as_the_document_block_its_own_client_sent(
    replay: Any,
) -> None:
    server = replay("anthropic/document_input")
    recorded = recorded_request("anthropic/document_input", 0)["messages"][0]["content"][1]
    pdf = base64.b64decode(recorded["source"]["data"])
    reader = Agent(role="Reader", goal="Read documents", llm=model(CLAUDE, server))
    task = Task(description="What is the main content of {document}?", agent=reader)

    output = await Ensemble(tasks=[task]).arun({"document": Document(data=pdf)})

    assert output.raw.startswith('The document simply contains the text "Dummy PDF file"')
    (request,) = server.requests
    blocks = request.body["messages"][-1]["content"]
    (document,) = [block for block in blocks if block["type"] == "document"]
    assert document["source"] == recorded["source"]  # base64, application/pdf, byte for byte


GEMINI = "gemini/gemini-2.0-flash"


def _plain_keys(value: Any) -> Any:
    """A JSON value with every key lower-cased and its underscores dropped: Gemini's API takes a
    field in either spelling (``inlineData`` / ``inline_data``), as its JSON mapping says."""
    if isinstance(value, dict):
        return {k.replace("_", "").lower(): _plain_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_keys(v) for v in value]
    return value


async def test_an_image_reaches_gemini_as_the_inline_data_part_its_own_client_sent(
    replay: Any,
) -> None:
    """Recorded with Google's own client (the photo replaced by a small PNG, SOURCES.md): the
    image goes as an inline data part with its media type, beside the task's text."""
    server = replay("gemini/image_input")
    recorded = recorded_request("gemini/image_input", 0)["contents"][0]["parts"][1]
    png = base64.b64decode(recorded["inlineData"]["data"])
    looker = Agent(role="Looker", goal="Say what images show", llm=model(GEMINI, server))
    task = Task(
        description="What fruit is in the image?", agent=looker, attachments=[Image(data=png)]
    )

    output = await Ensemble(tasks=[task]).arun()

    assert output.raw == "The fruit in the image is a kiwi."
    assert output.usage.prompt_tokens == 3367  # the recorded image's tokens, as Gemini counted
    (request,) = server.requests
    sent = _plain_keys(request.body["contents"][-1]["parts"])
    assert _plain_keys(recorded) in sent  # {"inlinedata": {"mimetype": "image/png", "data": ...}}
    assert any("What fruit is in the image?" in part.get("text", "") for part in sent)
