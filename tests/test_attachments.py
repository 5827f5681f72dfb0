"""Image, Document and Audio: exactly one source, a media type of their kind, bounded bytes,
and a short description wherever they are shown (never their bytes)."""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from typing import Any

import pytest

from agentensemble import Audio, Document, Image
from agentensemble.attachments import MAX_ATTACHMENT_BYTES, Attachment

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 40
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 24
MP3 = b"ID3\x03\x00\x00\x00" + b"\x00" * 40


@pytest.mark.parametrize(
    ("kind", "settings", "media_type"),
    [
        (Image, {"data": PNG}, "image/png"),
        (Image, {"data": JPEG}, "image/jpeg"),
        (Image, {"data": b"RIFF\x00\x00\x00\x00WEBPVP8 "}, "image/webp"),
        (Image, {"data": b"GIF89a" + b"\x00" * 8}, "image/gif"),
        (Image, {"data": b"???", "media_type": "image/png"}, "image/png"),
        (Image, {"url": "https://example.com/a/cat.JPG"}, "image/jpeg"),
        (Image, {"url": "https://example.com/render?id=4"}, None),  # the provider reads it
        (Document, {"data": PDF}, "application/pdf"),
        (Document, {"data": "naïve notes".encode()}, "text/plain"),
        (Document, {"data": b"a,b\n1,2\n", "media_type": "text/csv"}, "text/csv"),
        (Document, {"url": "https://example.com/report.pdf"}, "application/pdf"),
        (Audio, {"data": WAV}, "audio/wav"),
        (Audio, {"data": MP3}, "audio/mpeg"),
        (Audio, {"url": "https://example.com/call.mp3"}, "audio/mpeg"),
    ],
)
def test_the_media_type_is_given_or_guessed_from_the_bytes_or_the_name(
    kind: type[Attachment], settings: dict[str, Any], media_type: str | None
) -> None:
    assert kind(**settings).media_type == media_type


@pytest.mark.parametrize(
    ("name", "content", "kind", "media_type"),
    [
        ("chart.png", PNG, Image, "image/png"),
        ("photo.bin", JPEG, Image, "image/jpeg"),  # the bytes win over a wrong suffix
        ("notes.md", b"# Notes\n", Document, "text/markdown"),
        ("invoice.pdf", PDF, Document, "application/pdf"),
        ("call.wav", WAV, Audio, "audio/wav"),
    ],
)
def test_a_path_is_read_once_when_made(
    tmp_path: Path, name: str, content: bytes, kind: type[Attachment], media_type: str
) -> None:
    file = tmp_path / name
    file.write_bytes(content)
    attachment = kind(path=file)
    file.unlink()  # read when made: the file may go away afterwards

    assert (attachment.data, attachment.media_type, attachment.label) == (
        content,
        media_type,
        name,
    )


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: Image(), r"Image needs one of url=, data= or path=; none was given"),
        (
            lambda: Image(url="https://x.test/a.png", data=PNG),
            r"Image takes exactly one of url=, data=, path=; got url= and data=",
        ),
        (
            lambda: Document(data=PDF, path="a.pdf", url="https://x.test/a.pdf"),
            r"got url= and data= and path=",
        ),
        (lambda: Image(path="/no/such/chart.png"), r"Image path= '/no/such/chart.png': no such"),
        (lambda: Image(path="/"), r"Image path= '/' is not a file"),
        (lambda: Image(data=b""), r"Image data= is empty"),
        (lambda: Image(data=b"\x00\x01\x02"), r"Image: the media type of its data could not be"),
        (lambda: Image(data=PDF), r"Image cannot hold 'application/pdf' \(from its data\)"),
        (lambda: Audio(data=PNG), r"Audio cannot hold 'image/png'"),
        (lambda: Document(data=b"\x00\x9f\x92"), r"Document: the media type of its data"),
        (lambda: Document(url="https://x.test/dl?id=3"), r"Document: the media type of its url"),
        (lambda: Image(data=PNG, media_type="png"), r"media_type= must be a type like 'image/png'"),
        (lambda: Image(url="file:///etc/passwd"), r"Image url= must be an http\(s\) URL"),
        (lambda: Image(url="data:image/png;base64,AA"), r"bytes go in data="),
        (lambda: Image(data="not bytes"), r"Image data= takes bytes; got str"),  # type: ignore[arg-type]
        (lambda: Image(path=3), r"Image path= takes a str or a Path; got int"),  # type: ignore[arg-type]
        (lambda: Document(data=PDF, name=" "), r"Document name= must be a non-empty str"),
        (
            lambda: Image(data=b"\x89PNG\r\n\x1a\n" + b"\x00" * MAX_ATTACHMENT_BYTES),
            r"Image data= holds 20.0 MiB; an attachment holds at most 20 MiB",
        ),
    ],
)
def test_every_bad_attachment_is_refused_naming_the_field(make: Any, error: str) -> None:
    with pytest.raises((ValueError, TypeError), match=error):
        make()


def test_a_file_over_the_bound_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "huge.png"
    with big.open("wb") as handle:  # sparse: its size says enough, nothing is read
        handle.truncate(MAX_ATTACHMENT_BYTES + 1)

    with pytest.raises(ValueError, match=r"Image path= '.*huge.png' holds 20.0 MiB"):
        Image(path=big)


@pytest.mark.parametrize(
    ("attachment", "shown"),
    [
        (Image(data=PNG), r"\[image: png, 48 B, sha256:[0-9a-f]{8}\]"),
        (Document(data=PDF, name="invoice"), r"\[document: invoice, pdf, \d+ B, sha256:\w{8}\]"),
        (Image(data=PNG * 300), r"\[image: png, 14 kB, sha256:\w{8}\]"),
        (Image(url="https://cdn.test/a/b/cat.png"), r"\[image: png, url cdn.test/…/cat.png\]"),
    ],
)
def test_repr_is_a_short_description_never_the_bytes(attachment: Attachment, shown: str) -> None:
    assert re.fullmatch(shown, repr(attachment))


def test_a_signed_url_s_token_stays_out_of_the_description() -> None:
    image = Image(url="https://x:sk-proj-abcdefghijklmnop1234@cdn.test/cat.png")
    assert "sk-proj" not in repr(image)


def test_str_is_how_a_prompt_names_it() -> None:
    assert str(Document(data=PDF, name="invoice")) == "[attachment: invoice]"
    assert str(Image(data=PNG)) == "[attachment: image]"
    assert str(Image(data=PNG).named("chart")) == "[attachment: chart]"


def test_attachments_are_immutable_comparable_and_pickle_whole() -> None:
    image = Image(data=PNG)
    with pytest.raises(AttributeError, match="immutable"):
        image.data = b""  # type: ignore[misc]
    assert image == Image(data=PNG) and hash(image) == hash(Image(data=PNG))
    assert image != Image(data=JPEG)
    assert pickle.loads(pickle.dumps(image)) == image
    assert image.data_url().startswith("data:image/png;base64,iVBORw0KGgo")


@pytest.mark.parametrize(
    ("media_type", "fmt"), [("audio/wav", "wav"), ("audio/mpeg", "mp3"), ("audio/x-wav", "wav")]
)
def test_audio_says_its_format_as_openai_names_it(media_type: str, fmt: str) -> None:
    assert Audio(data=WAV, media_type=media_type).format == fmt
