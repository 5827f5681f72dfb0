"""Attachments in a durable run: a Document run input and a tool's Image are checkpointed by
digest and size, their bytes kept once per digest in our own table beside DBOS's, and loaded
back when a resumed run, a fork or a replay reads them; the model is sent both."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import json
import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos")

import sqlalchemy as sa

from agentensemble import LLM, Document, Image, RetryPolicy
from agentensemble.attachments import reading_kept_bytes
from agentensemble.durable import DurableClient
from agentensemble.durable._kept import (
    BYTES_TABLE,
    RUNS_TABLE,
    KeptBytes,
    MissingAttachmentError,
    keeping_for,
)
from agentensemble.durable._steps import checkpointable
from agentensemble.llm.types import ATTACHMENTS_KEY
from agentensemble.testing import OpenAICompatibleServer
from agentensemble.tools.base import as_tool_result

APP = Path(__file__).with_name("_attachments_app.py")
KEPT_APP = Path(__file__).with_name("_kept_app.py")
MARKER = b"KEPT-BY-DIGEST-MARKER"  # as _kept_app.py writes it into both attachments


def test_a_durable_run_takes_an_input_document_and_a_tool_s_image(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    done = subprocess.run(
        [sys.executable, str(APP), db, "check-1"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout.strip().splitlines()[-1])
    assert output["raw"] == "Invoice 7 is paid."
    assert output["tool"] == "[attachment: image]"
    first, second = output["sent"]
    assert first == [first[0]] and first[0].startswith("[document: invoice, pdf, ")
    assert second[0] == first[0] and second[1].startswith("[image: png, 10 kB, sha256:")


def test_a_tool_result_with_attachments_is_checkpointed_as_it_is() -> None:
    result = as_tool_result(["scan:", Image(data=b"\x89PNG\r\n\x1a\n" + bytes(8))])
    assert checkpointable(result, "tool:scan") is result


# -- checkpoints keep attachments by digest ----------------------------------------------------


def kept_app(db: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(KEPT_APP), db, *args],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **env},
    )


def answers(done: subprocess.CompletedProcess[str]) -> tuple[list[str], dict[str, str]]:
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout.strip().splitlines()[-1])
    return printed["tasks"], printed["expected"]


def engine_for(url: str) -> Any:
    return sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))


def dbos_tables(url: str) -> dict[str, list[bytes]]:
    """Every value of every DBOS table, as bytes (a pickled checkpoint also base64-decoded)."""
    engine = engine_for(url)
    schema = None if url.startswith("sqlite") else "dbos"
    found: dict[str, list[bytes]] = {}
    try:
        with engine.connect() as connection:
            for name in sa.inspect(engine).get_table_names(schema=schema):
                if name.startswith("agentensemble_"):
                    continue
                table = sa.Table(name, sa.MetaData(), schema=schema, autoload_with=connection)
                values: list[bytes] = []
                for row in connection.execute(sa.select(table)):
                    for value in row:
                        raw = value.encode() if isinstance(value, str) else value
                        if isinstance(raw, bytes):
                            values.append(raw)
                            with contextlib.suppress(ValueError):
                                values.append(base64.b64decode(raw, validate=True))
                found[name] = values
    finally:
        engine.dispose()
    return found


def kept_rows(url: str) -> tuple[list[tuple[str, int]], list[tuple[str, str]]]:
    engine = engine_for(url)
    try:
        with engine.connect() as connection:
            kept = connection.execute(
                sa.text(f"SELECT digest, size FROM {BYTES_TABLE} ORDER BY size")
            ).all()
            runs = connection.execute(sa.text(f"SELECT run_id, digest FROM {RUNS_TABLE}")).all()
    finally:
        engine.dispose()
    return [(str(d), int(n)) for d, n in kept], [(str(r), str(d)) for r, d in runs]


def test_checkpoints_hold_references_and_the_bytes_are_kept_once(any_database: str) -> None:
    tasks, expected = answers(kept_app(any_database, "run", "kept-1"))
    # both tasks' model turns were sent the 2 MB document and the 1 MB image
    assert tasks == [
        f"one: {expected['document']} {expected['image']} {expected['image']}",
        f"two: {expected['document']} {expected['image']}",
    ]
    tables = dbos_tables(any_database)
    assert {"workflow_input", "operation_outputs"} <= set(tables)  # the checkpoints we read
    assert sum(len(v) for values in tables.values() for v in values) < 100_000
    assert not [t for t, values in tables.items() if any(MARKER in v for v in values)]
    kept, runs = kept_rows(any_database)
    # the image returned three times and the document read by both tasks: one row each
    assert [size for _, size in kept] == [1_001_008, 2_077_509]
    assert sorted(runs) == sorted(("kept-1", digest) for digest, _ in kept)
    # pruning the run forgets its rows; its bytes wait out the grace period, then go
    with DurableClient(any_database) as client:
        assert client.prune(keep_last=0) == 1
    assert kept_rows(any_database) == (kept, [])
    engine = engine_for(any_database)
    try:
        assert KeptBytes(engine).prune([], grace_ms=0) == 2
    finally:
        engine.dispose()
    assert kept_rows(any_database) == ([], [])


def test_a_resumed_run_and_a_fork_read_the_kept_bytes_back(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    killed = kept_app(db, "run", "kept-2", KILL_AT_FINAL="two")
    assert killed.returncode == -9, killed.stderr  # died as task two's last turn began
    # a new process: the inputs and task two's scan come back from the checkpoints as
    # references, and the model is sent the bytes read from our table
    tasks, expected = answers(kept_app(db, "result", "kept-2"))
    assert tasks[1] == f"two: {expected['document']} {expected['image']}"
    tasks, expected = answers(kept_app(db, "fork", "kept-2", "2", "kept-2-fork"))
    assert tasks == [
        f"one: {expected['document']} {expected['image']} {expected['image']}",
        f"two: {expected['document']} {expected['image']}",
    ]
    _, runs = kept_rows(db)
    # the fork refers to its parent's attachments too: pruning the parent keeps what it replays
    assert sorted(d for r, d in runs if r == "kept-2-fork") == sorted(
        d for r, d in runs if r == "kept-2"
    )


PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


@pytest.fixture
def store(any_database: str) -> Any:
    engine = engine_for(any_database)
    yield KeptBytes(engine)
    reading_kept_bytes(None)
    engine.dispose()


def rows(store: KeptBytes, table: str) -> int:
    with store.engine.connect() as connection:
        return int(connection.execute(sa.text(f"SELECT COUNT(*) FROM {table}")).scalar() or 0)


def test_outside_a_run_an_attachment_pickles_whole(store: KeptBytes) -> None:
    image = Image(data=PNG)
    assert PNG in pickle.dumps(image)
    with keeping_for(None, store):  # no run: nothing to keep them for
        assert PNG in pickle.dumps(image)
    with keeping_for("run-c", store):  # immutable: copies are itself, never a reference
        assert copy.copy(image) is image and copy.deepcopy([image])[0] is image


def test_a_reference_loads_its_bytes_when_first_read(store: KeptBytes) -> None:
    image = Image(data=PNG)
    with keeping_for("run-a", store):
        pickled = pickle.dumps({"result": [image, image]})
    assert PNG not in pickled and rows(store, BYTES_TABLE) == 1
    loaded = pickle.loads(pickled)["result"][0]
    assert (loaded.size, loaded.digest) == (image.size, image.digest)  # nothing read yet
    with pytest.raises(ValueError, match="open the DurableRuntime or DurableClient"):
        _ = loaded.data
    reading_kept_bytes(store.load)
    assert loaded.data == PNG and loaded == image


def test_a_missing_blob_names_its_digest_and_the_run(store: KeptBytes) -> None:
    document = Document(data=b"%PDF-1.4\n" + bytes(64), name="invoice")
    with keeping_for("run-b", store):
        pickled = pickle.dumps(document)
    assert store.prune(["run-b"], grace_ms=0) == 1  # pruned while a checkpoint still needed it
    reading_kept_bytes(store.load)
    with pytest.raises(MissingAttachmentError) as raised:
        _ = pickle.loads(pickled).data
    assert f"{document.digest} ({document.size} bytes)" in str(raised.value)
    assert "durable run 'run-b' refers to" in str(raised.value)


@pytest.mark.parametrize("altered", [False, True], ids=["kept", "altered"])
def test_a_model_turn_reads_kept_bytes_off_the_loop_with_the_same_errors(
    store: KeptBytes, altered: bool
) -> None:
    """A resumed run's model turn reads its attachment from the database in a worker thread
    (the engine's connection made there), not on the event loop; an altered row is the same
    error, naming the digest."""
    image = Image(data=PNG)
    with keeping_for("run-d", store):
        pickled = pickle.dumps(image)
    if altered:
        with store.engine.begin() as connection:
            connection.execute(sa.text(f"UPDATE {BYTES_TABLE} SET data = :d"), {"d": PNG[::-1]})
    readers: list[int] = []

    def load(digest: str, size: int, owner: str | None) -> bytes:
        readers.append(threading.get_ident())
        return store.load(digest, size, owner)

    reading_kept_bytes(load)
    history = [{"role": "user", "content": "look", ATTACHMENTS_KEY: [pickle.loads(pickled)]}]
    with OpenAICompatibleServer() as server:
        server.set_responder(lambda body: "seen")
        llm = LLM(
            "openai/test-model",
            api_base=server.base_url,
            api_key="sk-test-kept-1",
            retry_policy=RetryPolicy(max_attempts=1),
        )

        async def turn() -> tuple[str | None, int]:
            return (await llm.complete(history)).content, threading.get_ident()

        if altered:
            with pytest.raises(ValueError, match=rf"{image.digest} .*database was altered"):
                asyncio.run(turn())
            assert server.requests == []
            return
        content, loop_thread = asyncio.run(turn())
    assert content == "seen" and readers and loop_thread not in readers
    sent = server.requests[0]["messages"][0]["content"][-1]
    assert sent == {"type": "image_url", "image_url": {"url": image.data_url()}}


def test_pruning_drops_only_bytes_no_remaining_run_refers_to(store: KeptBytes) -> None:
    shared, own = Image(data=PNG), Image(data=PNG + b"x")
    for run, attachments in (("a", [shared, own]), ("b", [shared])):
        with keeping_for(run, store):
            pickle.dumps(attachments)
    store.share("b", "b-fork")
    assert store.prune(["a"], grace_ms=0) == 1  # its own image; the shared one is b's too
    assert store.prune(["b"], grace_ms=0) == 0  # still the fork's
    assert store.prune(["x"]) == 0 and rows(store, BYTES_TABLE) == 1  # kept within the grace
    assert store.prune(["b-fork"], grace_ms=0) == 1 and rows(store, BYTES_TABLE) == 0
