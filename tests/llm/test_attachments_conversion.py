"""Attachments on their way out: one conversion (``llm/_messages.py``) turns them into the
OpenAI-format content parts litellm and the openai lane both send, and a model litellm's table
says cannot take a kind of part is refused before any request."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from agentensemble import LLM, Audio, ConfigurationError, Document, Image, RetryPolicy
from agentensemble.llm._messages import content_part, input_kinds, outgoing
from agentensemble.llm.types import ATTACHMENTS_KEY

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
PDF = b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\n"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 8


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize(
    ("attachment", "part"),
    [
        (
            Image(data=PNG),
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}},
        ),
        (
            Image(url="https://cdn.test/cat.jpg"),
            {"type": "image_url", "image_url": {"url": "https://cdn.test/cat.jpg"}},
        ),
        (
            Document(data=PDF, name="invoice.pdf"),
            {
                "type": "file",
                "file": {
                    "file_data": f"data:application/pdf;base64,{b64(PDF)}",
                    "filename": "invoice.pdf",
                },
            },
        ),
        (
            Document(url="https://cdn.test/report.pdf"),
            {
                "type": "file",
                "file": {"file_id": "https://cdn.test/report.pdf", "format": "application/pdf"},
            },
        ),
        (
            Document(data=b"# Notes\nship it", media_type="text/markdown"),
            {
                "type": "text",
                "text": "# Notes\nship it",
            },
        ),
        (
            Audio(data=WAV),
            {"type": "input_audio", "input_audio": {"data": b64(WAV), "format": "wav"}},
        ),
        (
            Audio(url="https://cdn.test/call.mp3"),
            {
                "type": "file",
                "file": {"file_id": "https://cdn.test/call.mp3", "format": "audio/mpeg"},
            },
        ),
    ],
)
def test_each_kind_becomes_its_openai_content_part(attachment: Any, part: dict[str, Any]) -> None:
    assert content_part(attachment) == part


def test_a_user_message_sends_its_text_then_each_attachment_after_its_name() -> None:
    invoice = Document(data=PDF).named("invoice")
    history = [
        {"role": "system", "content": "You read invoices."},
        {"role": "user", "content": "Total of [attachment: invoice]?", ATTACHMENTS_KEY: [invoice]},
    ]

    sent = outgoing(history, "openai")

    assert sent[0] is history[0]
    assert sent[1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Total of [attachment: invoice]?"},
            {"type": "text", "text": "[attachment: invoice]"},
            content_part(invoice),
        ],
    }
    assert ATTACHMENTS_KEY in history[1]  # the history itself is left as it was


def test_a_tool_turn_s_attachments_follow_its_tool_messages_in_one_user_message() -> None:
    chart, photo = Image(data=PNG).named("chart"), Image(url="https://cdn.test/p.png")
    history = [
        {"role": "user", "content": "Compare"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "a"}, {"id": "b"}]},
        {
            "role": "tool",
            "tool_call_id": "a",
            "content": "[attachment: chart]",
            ATTACHMENTS_KEY: [chart],
        },
        {
            "role": "tool",
            "tool_call_id": "b",
            "content": "[attachment: p.png]",
            ATTACHMENTS_KEY: [photo],
        },
        {"role": "assistant", "content": "They differ."},
    ]

    sent = outgoing(history, "openai")

    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool", "user", "assistant"]
    assert sent[2] == {"role": "tool", "tool_call_id": "a", "content": "[attachment: chart]"}
    assert sent[4]["content"] == [
        {"type": "text", "text": "[attachment: chart]"},
        content_part(chart),
        {"type": "text", "text": "[attachment: p.png]"},
        content_part(photo),
    ]


def test_a_history_without_attachments_is_sent_as_it_was() -> None:
    history = [{"role": "user", "content": "hi"}]
    assert outgoing(history, "openai") == history
    assert input_kinds(history) == {}


def test_input_kinds_name_what_a_model_must_take() -> None:
    history = [
        {
            "role": "user",
            "content": "x",
            ATTACHMENTS_KEY: [
                Document(data=b"plain text"),  # text: any model reads it
                Document(data=PDF, name="a.pdf"),
                Image(data=PNG).named("chart"),
                Audio(data=WAV),
            ],
        }
    ]
    assert input_kinds(history) == {"pdf": "a.pdf", "image": "chart", "audio": "audio"}


@pytest.mark.parametrize(
    ("model", "attachment", "part"),
    [
        ("openai/gpt-3.5-turbo", Image(data=PNG), "image parts"),
        ("deepseek/deepseek-chat", Image(data=PNG), "image parts"),
        ("openai/gpt-4o", Audio(data=WAV), "audio parts"),
    ],
)
async def test_a_model_that_cannot_take_a_part_is_refused_before_any_request(
    model: str, attachment: Any, part: str
) -> None:
    llm = LLM(
        model, api_base="http://127.0.0.1:9", api_key="k", retry_policy=RetryPolicy(max_attempts=1)
    )
    history = [{"role": "user", "content": "look", ATTACHMENTS_KEY: [attachment]}]

    with pytest.raises(ConfigurationError, match=rf"model '{model}' cannot take {part}"):
        await llm.complete(history)  # port 9 would refuse: the error comes first, from the table


def test_an_attachment_s_name_passes_the_redaction_policy_on_its_way_out() -> None:
    leaky = Document(data=PDF, name="sk-proj-abcdefghijklmnopqrstuvwx.pdf")
    history = [{"role": "tool", "tool_call_id": "a", "content": "x", ATTACHMENTS_KEY: [leaky]}]

    label = outgoing(history, "openai")[-1]["content"][0]["text"]

    assert "sk-proj-abcdefghijklmnopqrstuvwx" not in label and label.startswith("[attachment: ")
