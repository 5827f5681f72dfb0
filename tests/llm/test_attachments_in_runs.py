"""Attachments in whole runs with scripted models (which take every part as it is): where they
go in the conversation, how the prompt names them, and that traces, saved outputs and events
show a short description, never the bytes."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from agentensemble import Agent, Document, Ensemble, Image, Task, tool
from agentensemble.llm.types import ATTACHMENTS_KEY
from agentensemble.testing import ScriptedChatModel, tool_call
from agentensemble.tools.base import ToolResult, as_tool_result

PNG = b"\x89PNG\r\n\x1a\n" + b"\x07" * 3000
PDF = b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\n" + b"x" * 500


def test_an_input_variable_renders_its_name_and_its_attachment_goes_with_the_prompt() -> None:
    model = ScriptedChatModel(["42.00 EUR"])
    agent = Agent(role="Clerk", goal="Read invoices", llm=model)
    task = Task(
        description="Total of {invoice} as drawn in the chart?",
        agent=agent,
        attachments=[Image(data=PNG)],
    )

    Ensemble(tasks=[task]).run({"invoice": Document(data=PDF)})

    prompt = model.requests[0].messages[1]
    assert "Total of [attachment: invoice] as drawn in the chart?" in prompt["content"]
    attached = prompt[ATTACHMENTS_KEY]
    assert [a.label for a in attached] == ["invoice", "image"]  # named in the text first
    assert attached[0].data == PDF


def test_two_attachments_of_one_name_are_told_apart() -> None:
    model = ScriptedChatModel(["same"])
    task = Task(
        description="Compare {image} with the others",
        agent=Agent(role="R", goal="Compare", llm=model),
        attachments=[Image(data=PNG), Image(data=PNG + b"2")],
    )

    Ensemble(tasks=[task]).run({"image": Image(data=PNG + b"1")})

    attached = model.requests[0].messages[1][ATTACHMENTS_KEY]
    assert [a.label for a in attached] == ["image", "image 2", "image 3"]
    assert attached[0].data == PNG + b"1"  # the one the text names keeps its name


def test_an_input_attachment_with_a_name_keeps_it() -> None:
    model = ScriptedChatModel(["ok"])
    task = Task(description="Read {doc}", agent=Agent(role="R", goal="Read", llm=model))

    Ensemble(tasks=[task]).run({"doc": Document(data=PDF, name="contract.pdf")})

    assert "Read [attachment: contract.pdf]" in model.requests[0].messages[1]["content"]


def test_a_handler_task_takes_no_attachments() -> None:
    with pytest.raises(ValueError, match="a task with a handler makes no model call, so it takes"):
        Task(description="x", handler=lambda context: "y", attachments=[Image(data=PNG)])


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("chart.png", r"Task\(attachments=...\) takes a list, got one str"),
        (["chart.png"], r"attachments\[0\] is a str; it takes Image, Document or Audio"),
    ],
)
def test_task_attachments_must_be_attachments(value: object, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        Task(description="x", attachments=value)


@pytest.mark.parametrize(
    ("returned", "output", "labels"),
    [
        (Image(data=PNG), "[attachment: image]", ["image"]),
        (
            ["Two charts:", Image(data=PNG), Image(data=PNG)],
            "Two charts:\n[attachment: image]\n[attachment: image 2]",
            ["image", "image 2"],
        ),
        (["just text"], '["just text"]', []),  # no attachment: JSON as any list
    ],
)
def test_a_tool_s_attachments_are_named_in_its_text(
    returned: object, output: str, labels: list[str]
) -> None:
    result = as_tool_result(returned)
    assert result.output == output
    assert [a.label for a in result.attachments] == labels


def test_tool_result_attachments_must_be_attachments() -> None:
    with pytest.raises(ValueError, match=r"ToolResult attachments\[0\] is a bytes"):
        ToolResult(output="x", attachments=(b"png",))


@tool
def screenshot() -> Image:
    """A screenshot of the page."""
    return Image(data=PNG)


def test_a_tool_returning_an_image_reaches_the_model_and_stays_out_of_saved_outputs() -> None:
    model = ScriptedChatModel([tool_call("screenshot"), "A green page."])
    agent = Agent(role="Tester", goal="Check pages", tools=[screenshot], llm=model)
    ensemble = Ensemble(tasks=[Task(description="Check the page", agent=agent)], capture="full")

    output = ensemble.run()

    tool_message = model.requests[1].messages[-1]
    assert tool_message["content"] == "[attachment: image]"
    assert tool_message[ATTACHMENTS_KEY] == [Image(data=PNG)]
    saved = output.model_dump_json()
    trace = json.dumps(output.trace.model_dump(mode="json"))
    for shown in (saved, trace):
        assert "iVBORw0KGgo" not in shown and "\\u0007\\u0007" not in shown  # no bytes, no base64
    assert "[image: png, 3 kB, sha256:" in trace
    assert pickle.loads(pickle.dumps(output)).raw == "A green page."


def test_a_hierarchical_manager_sees_every_task_s_attachments() -> None:
    from agentensemble import Workflow

    manager = ScriptedChatModel(["The chart shows growth."])
    writer = Agent(role="Writer", goal="Write", llm=ScriptedChatModel([]))
    task = Task(description="Describe {chart}", attachments=[Document(data=PDF, name="brief")])
    ensemble = Ensemble(
        tasks=[task], agents=[writer], workflow=Workflow.HIERARCHICAL, manager_llm=manager
    )

    ensemble.run({"chart": Image(data=PNG)})

    brief = manager.requests[0].messages[1]
    assert [a.label for a in brief[ATTACHMENTS_KEY]] == ["chart", "brief"]
    assert "Describe [attachment: chart]" in brief["content"]


def test_for_each_over_documents_sends_one_document_with_each_run(tmp_path: Path) -> None:
    files = []
    for number in (1, 2):
        file = tmp_path / f"invoice-{number}.pdf"
        file.write_bytes(PDF + bytes([number]))
        files.append(Document(path=file))
    model = ScriptedChatModel(["paid", "unpaid"])
    task = Task(
        description="Is {item} paid?",
        for_each="invoices",
        agent=Agent(role="Clerk", goal="Check", llm=model),
    )

    Ensemble(tasks=[task]).run({"invoices": files})

    for request, name, file in zip(
        model.requests, ("invoice-1.pdf", "invoice-2.pdf"), files, strict=True
    ):
        prompt = request.messages[1]
        assert f"Is [attachment: {name}] paid?" in prompt["content"]
        assert prompt[ATTACHMENTS_KEY] == [file.named(name)]


SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz123456"


@tool
def read_config() -> list[object]:
    """The config file and a screenshot of it."""
    return [
        Document(data=f"api_key: {SECRET}\n".encode(), name="config.txt"),
        Image(data=PNG + SECRET.encode()),  # bytes that look like a key are not text
    ]


def test_a_tool_s_text_document_is_redacted_and_its_image_left_byte_for_byte() -> None:
    model = ScriptedChatModel([tool_call("read_config"), "done"])
    agent = Agent(role="Ops", goal="Check", tools=[read_config], llm=model)

    Ensemble(tasks=[Task(description="Check the config", agent=agent)]).run()

    document, image = model.requests[1].messages[-1][ATTACHMENTS_KEY]
    assert SECRET not in document.text() and document.text().startswith("api_key: ")
    assert document.label == "config.txt"
    assert image.data == PNG + SECRET.encode()
