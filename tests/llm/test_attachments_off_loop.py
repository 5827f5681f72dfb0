"""A request whose attachments hold bytes is built off the event loop: reading bytes a durable
checkpoint kept (a database query) and base64-encoding up to 20 MiB each turn would otherwise
block every other run on the loop. A request without any is built on the loop, as before; the
request body and the errors are the same either way."""

from __future__ import annotations

import asyncio
import hashlib
import json
import pickle
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentensemble import LLM, Document, Image, RetryPolicy
from agentensemble.attachments import Attachment, keeping_bytes, reading_kept_bytes
from agentensemble.llm.types import ATTACHMENTS_KEY
from agentensemble.testing import OpenAICompatibleServer

PNG = b"\x89PNG\r\n\x1a\n" + b"\x07" * 3000
PDF = b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\n" + b"x" * 500
CHART = Image(data=PNG, media_type="image/png")

#: Bytes "kept in a durable run's database": here, a dict the source below reads.
KEPT: dict[str, bytes] = {}


def kept(attachment: Attachment) -> Attachment:
    """``attachment`` as a resumed durable run holds it: a reference, its bytes not read yet."""

    def keep(digest: str, data: bytes) -> str:
        KEPT[digest] = data
        return "run-1"

    with keeping_bytes(keep):
        pickled = pickle.dumps(attachment)
    assert attachment.data is not None and attachment.data not in pickled
    loaded: Attachment = pickle.loads(pickled)
    return loaded


@pytest.fixture(autouse=True)
def no_kept_source() -> Iterator[None]:
    yield
    reading_kept_bytes(None)
    KEPT.clear()


def reading(
    thread_ids: list[int], wait: threading.Event | None = None
) -> Callable[[str, int, str | None], bytes]:
    """A kept-bytes source that notes which thread reads (and, given ``wait``, blocks until it
    is set, as a slow database would)."""

    def source(digest: str, size: int, owner: str | None) -> bytes:
        thread_ids.append(threading.get_ident())
        if wait is not None and not wait.wait(5):
            raise TimeoutError("the event loop never ran while the bytes were read")
        return KEPT[digest]

    return source


def ask(server: OpenAICompatibleServer, history: list[dict[str, Any]]) -> tuple[int, list[int]]:
    """Run one ``complete`` on a fresh loop; the loop's thread and the threads that built the
    request."""
    llm = LLM("openai/test-model", api_base=server.base_url, api_key="sk-test-offloop-1")
    built: list[int] = []
    original = LLM.request_kwargs

    def noting(self: LLM, *args: Any, **kwargs: Any) -> dict[str, Any]:
        built.append(threading.get_ident())
        return original(self, *args, **kwargs)

    async def main() -> int:
        await llm.complete(history)
        return threading.get_ident()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LLM, "request_kwargs", noting)
        loop_thread = asyncio.run(main())
    return loop_thread, built


def user(*attachments: Attachment) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "look", ATTACHMENTS_KEY: list(attachments)}]


@pytest.mark.parametrize(
    ("history", "off_loop"),
    [
        ([{"role": "user", "content": "hello"}], False),  # the common request: no hop
        (user(Image(url="https://cdn.test/cat.png")), False),  # a URL: no bytes here
        (user(Image(data=PNG)), True),
        (user(Document(data=PDF, name="invoice.pdf")), True),
        (user(Document(data=b"# notes", media_type="text/markdown")), True),
        (user(Image(url="https://cdn.test/cat.png"), Image(data=PNG)), True),
        (
            [
                {"role": "user", "content": "chart?"},
                {"role": "tool", "tool_call_id": "c1", "content": "x", ATTACHMENTS_KEY: [CHART]},
            ],
            True,
        ),
    ],
    ids=["no attachments", "url", "image", "pdf", "text document", "url and bytes", "tool's"],
)
def test_a_request_holding_attachment_bytes_is_built_off_the_loop_and_sent_as_before(
    history: list[dict[str, Any]], off_loop: bool
) -> None:
    with OpenAICompatibleServer() as server:
        server.set_responder(lambda body: "seen")
        loop_thread, built = ask(server, history)
        llm = LLM("openai/test-model", api_base=server.base_url, api_key="sk-test-offloop-1")
        expected = llm.request_kwargs(history)["messages"]  # built here, in the test's thread

    assert len(built) == 1 and (built[0] != loop_thread) is off_loop
    assert server.requests[0]["messages"] == json.loads(json.dumps(expected))


def test_kept_bytes_are_read_off_the_loop_which_runs_meanwhile() -> None:
    """A resumed run's attachment reads its database while other runs go on: the source blocks
    until a task on the loop releases it (on the loop, it would wait forever)."""
    image = kept(Image(data=PNG))
    readers: list[int] = []
    released = threading.Event()
    reading_kept_bytes(reading(readers, wait=released))

    with OpenAICompatibleServer() as server:
        server.set_responder(lambda body: "seen")
        llm = LLM("openai/test-model", api_base=server.base_url, api_key="sk-test-offloop-1")

        async def main() -> tuple[str | None, int]:
            asyncio.get_running_loop().call_later(0.05, released.set)  # another run's work
            answer = await llm.complete(user(image))
            return answer.content, threading.get_ident()

        content, loop_thread = asyncio.run(main())

    assert content == "seen" and readers and readers[0] != loop_thread
    sent = server.requests[0]["messages"][0]["content"][-1]
    assert sent == {"type": "image_url", "image_url": {"url": Image(data=PNG).data_url()}}


def test_an_altered_kept_blob_is_the_same_error_through_complete() -> None:
    image = kept(Image(data=PNG))
    digest = image.digest
    assert digest == "sha256:" + hashlib.sha256(PNG).hexdigest()
    KEPT[digest] = PNG[:-1] + b"\x08"  # the database's row changed behind the checkpoint
    reading_kept_bytes(reading([]))
    llm = LLM(
        "openai/test-model",
        api_base="http://127.0.0.1:9",  # never reached: the request is refused while built
        api_key="sk-test-offloop-1",
        retry_policy=RetryPolicy(max_attempts=1),
    )

    with pytest.raises(ValueError, match=rf"attachment {digest} .*durable database was altered"):
        asyncio.run(llm.complete(user(image)))
