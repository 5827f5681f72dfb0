"""Crew files with ``attachments:``: paths against the crew file's folder, URLs, settings; bad
entries are errors at their line. End to end: the loaded crew's request to a local
OpenAI-compatible server carries the PDF and the image as content parts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentensemble import LLM, Document, Image
from agentensemble.config import ConfigFileError, load_crew
from agentensemble.testing import OpenAICompatibleServer

CrewFile = Callable[..., Path]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(32)
PDF = b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\n"

CREW = """
agents:
  clerk: {role: Clerk, goal: Read invoices}
tasks:
  read:
    description: Read the invoice and compare it with {receipt}
    agent: clerk
    attachments:
      - document: docs/invoice.pdf
      - image: {url: "https://cdn.example.com/logo.png"}
      - document: {path: notes.txt, name: Notes}
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "invoice.pdf").write_bytes(PDF)
    (tmp_path / "notes.txt").write_text("Paid by card.\n")
    return tmp_path


def test_attachments_are_read_against_the_crew_file_s_folder(
    crew_file: CrewFile, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir("/")  # not the crew file's folder: relative paths must not use it
    (task,) = load_crew(crew_file(CREW)).tasks

    invoice, logo, notes = task.attachments
    assert invoice == Document(path=folder / "docs" / "invoice.pdf")
    assert logo == Image(url="https://cdn.example.com/logo.png")
    assert (notes.label, notes.media_type, notes.data) == (
        "Notes",
        "text/plain",
        b"Paid by card.\n",
    )


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        ("- invoice.pdf", "an attachment is one of image:, document:, audio:"),
        ("- picture: a.png", "an attachment is one of image:, document:, audio:"),
        ("- image: [a.png]", "expected a path, a URL or settings, got a list"),
        ("- image: {path: a.png, name: A}", "image takes url, path, media_type; got name"),
        ("- image: missing.png", "Image path= '.*missing.png': no such file"),
        ("- audio: docs/invoice.pdf", "Audio cannot hold 'application/pdf'"),
    ],
)
def test_a_bad_attachment_is_an_error_at_its_line(
    crew_file: CrewFile, folder: Path, entry: str, error: str
) -> None:
    text = f"""
agents:
  clerk: {{role: Clerk, goal: Read}}
tasks:
  read:
    description: Read
    agent: clerk
    attachments:
      {entry}
"""
    with pytest.raises(ConfigFileError, match=error) as caught:
        load_crew(crew_file(text))
    assert "crew.yaml:8: tasks.read.attachments[0]" in str(caught.value)


def test_a_crew_file_s_attachments_reach_the_provider_as_content_parts(
    crew_file: CrewFile, folder: Path
) -> None:
    ensemble = load_crew(crew_file(CREW))
    with OpenAICompatibleServer() as server:
        server.push_text("The invoice is paid.")
        model = LLM("openai/gpt-4o", api_base=server.base_url, api_key="local", max_retries=0)

        result = ensemble.model_copy(update={"llm": model}).run({"receipt": Image(data=PNG)})

        (body,) = server.requests
    assert result.raw == "The invoice is paid."
    content = body["messages"][1]["content"]
    assert "compare it with [attachment: receipt]" in content[0]["text"]
    names = [part["text"] for part in content[1::2]]
    assert names == [
        "[attachment: receipt]",  # named in the text: first
        "[attachment: invoice.pdf]",
        "[attachment: logo.png]",
        "[attachment: Notes]",
    ]
    receipt, invoice, logo, notes = content[2::2]
    assert invoice["file"]["filename"] == "invoice.pdf"
    assert logo == {"type": "image_url", "image_url": {"url": "https://cdn.example.com/logo.png"}}
    assert notes == {"type": "text", "text": "Paid by card.\n"}
    assert receipt["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
