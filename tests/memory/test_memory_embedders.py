"""Embedders: deterministic hashing vectors, semantic recall, litellm only on demand."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentensemble.memory import HashingEmbedder, LiteLLMEmbedder, SQLiteMemory


def test_hashing_vectors_are_normalised_and_the_same_in_another_process() -> None:
    vector = HashingEmbedder().embed(["Deploy the payments service"])[0]
    assert len(vector) == 256
    assert math.isclose(sum(x * x for x in vector), 1.0, rel_tol=1e-9)
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json; from agentensemble.memory import HashingEmbedder; "
            "print(json.dumps(HashingEmbedder().embed(['Deploy the payments service'])[0]))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    )
    assert json.loads(other.stdout) == vector


@pytest.mark.parametrize("dims", [0, 4, -1, True, "256"])
def test_hashing_dims_must_be_a_sensible_integer(dims: Any) -> None:
    with pytest.raises(ValueError, match="dims"):
        HashingEmbedder(dims=dims)


def test_with_an_embedder_an_entry_sharing_no_word_with_the_query_is_found(
    tmp_path: Path,
) -> None:
    store = SQLiteMemory(tmp_path / "m.sqlite", embedder=HashingEmbedder())
    store.add("kb", "Deployments happen on Fridays")
    store.add("kb", "Bob drinks green tea")
    hits = store.search("kb", "when do we deploy?")
    assert hits and hits[0].text == "Deployments happen on Fridays"
    lexical = SQLiteMemory(tmp_path / "m.sqlite")  # same file, no embedder: words only
    assert lexical.search("kb", "when do we deploy?") == []


def test_entries_written_without_an_embedder_are_embedded_when_one_searches(
    tmp_path: Path,
) -> None:
    SQLiteMemory(tmp_path / "m.sqlite").add("kb", "Deployments happen on Fridays")
    hybrid = SQLiteMemory(tmp_path / "m.sqlite", embedder=HashingEmbedder())
    assert [e.text for e in hybrid.search("kb", "deploying")] == ["Deployments happen on Fridays"]


def test_the_pure_python_scan_ranks_without_numpy(tmp_path: Path) -> None:
    store = SQLiteMemory(tmp_path / "m.sqlite", embedder=HashingEmbedder())
    for n in range(30):
        store.add("kb", f"note {n} about deployment window {n % 7}")
    store.use_numpy = False
    pure = [(e.id, round(e.score or 0, 6)) for e in store.search("kb", "deploying windows")]
    assert len(pure) == 5


class _Embeddings(BaseHTTPRequestHandler):
    bodies: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        texts = body["input"]
        data = [
            {"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.0]}
            for i, t in enumerate(texts)
        ]
        payload = json.dumps(
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def embeddings_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_litellm_embedder_calls_the_provider_over_http(embeddings_url: str) -> None:
    embedder = LiteLLMEmbedder(
        "openai/text-embedding-3-small", api_base=embeddings_url, api_key="sk-test-embed-key"
    )
    assert "sk-test" not in repr(embedder)
    vectors = embedder.embed(["ab", "abcd"])
    assert len(vectors) == 2
    assert vectors[1][0] > vectors[0][0]  # normalised, in input order
    assert _Embeddings.bodies[-1]["input"] == ["ab", "abcd"]


def test_importing_memory_loads_no_driver_and_no_litellm() -> None:
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, agentensemble, agentensemble.memory as m; "
            "m.LiteLLMEmbedder('openai/x'); m.SQLiteMemory(':memory:'); "
            "print(sorted(n for n in ('litellm', 'psycopg', 'numpy') if n in sys.modules))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert probe.stdout.strip() == "[]"


def test_import_agentensemble_does_not_import_the_memory_package() -> None:
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, agentensemble; print([n for n in sys.modules "
            "if n.startswith('agentensemble.memory') or n == 'sqlite3'])",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert probe.stdout.strip() == "[]"
