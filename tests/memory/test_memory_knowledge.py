"""Knowledge from files: formats, folders, re-indexing on change, retrieval for tasks."""

from __future__ import annotations

import json
import os
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentensemble import LLM, Agent, ConfigurationError, Ensemble, Task
from agentensemble.memory import Knowledge, SQLiteMemory
from agentensemble.testing import OpenAICompatibleServer


@pytest.fixture
def server() -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer() as running:
        yield running


def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / "faq").mkdir(parents=True)
    (folder / "returns.md").write_text("# Returns\n\nItems can be returned within 30 days.\n")
    (folder / "faq" / "shipping.txt").write_text("Shipping to Norway takes five days.")
    (folder / "hours.html").write_text(
        "<html><head><style>p{color:red}</style><script>alert('x')</script></head>"
        "<body><h1>Opening hours</h1><p>We open at 9&nbsp;am on Saturdays.</p></body></html>"
    )
    (folder / "prices.json").write_text(json.dumps({"plans": [{"name": "pro", "price": 12}]}))
    (folder / "stores.csv").write_text("city,address\nOslo,Karl Johans gate 1\nBergen,Bryggen 3\n")
    (folder / ".hidden.md").write_text("secret plans")
    (folder / "image.png").write_bytes(b"\x89PNG")
    return folder


def texts(store: SQLiteMemory, scope: str = "knowledge") -> list[str]:
    return [e.text for e in store.entries(scope)]


def test_every_format_is_read_as_text(tmp_path: Path) -> None:
    store = SQLiteMemory(tmp_path / "m.sqlite")
    report = Knowledge([docs(tmp_path)]).sync(store)
    assert len(report.added) == 5
    joined = "\n".join(texts(store))
    assert "Items can be returned within 30 days." in joined
    assert "Shipping to Norway takes five days." in joined
    assert "We open at 9\xa0am on Saturdays." in joined or "We open at 9 am" in joined
    assert "alert" not in joined and "color" not in joined
    assert 'plans[0].name: "pro"' in joined and "plans[0].price: 12" in joined
    assert "city: Oslo; address: Karl Johans gate 1" in joined
    assert "secret plans" not in joined
    hit = store.search("knowledge", "how long does shipping to Norway take?")[0]
    assert hit.metadata["source"].endswith("shipping.txt")


def test_a_changed_file_is_reindexed_and_a_removed_one_dropped(tmp_path: Path) -> None:
    store = SQLiteMemory(tmp_path / "m.sqlite")
    folder = docs(tmp_path)
    knowledge = Knowledge([folder])
    knowledge.sync(store)
    again = knowledge.sync(store)
    assert (again.added, again.updated, again.removed, again.unchanged) == ([], [], [], 5)

    shipping = folder / "faq" / "shipping.txt"
    shipping.write_text("Shipping to Norway now takes two days.")
    os.utime(shipping, ns=(1, 1))  # a new stamp even on coarse clocks
    (folder / "stores.csv").unlink()
    report = knowledge.sync(store)
    assert report.updated == [str(shipping)] and report.removed == [str(folder / "stores.csv")]
    joined = "\n".join(texts(store))
    assert "two days" in joined and "five days" not in joined and "Oslo" not in joined


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_file_named_in_bytes_that_are_not_utf8_is_indexed_once_and_dropped_when_removed(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    # a downloaded corpus: the name read back as a lone surrogate failed every sync's write
    from agentensemble.memory import PostgresMemory

    folder = tmp_path / "kb"
    folder.mkdir()
    named = os.path.join(os.fsencode(folder), b"notes-\xff.md")
    Path(os.fsdecode(named)).write_text("Lyon is in France.")
    store: Any = (
        SQLiteMemory(tmp_path / "m.sqlite")
        if kind == "sqlite"
        else PostgresMemory(request.getfixturevalue("postgres_url"))
    )
    knowledge = Knowledge([folder])
    try:
        assert knowledge.sync(store).added == [f"{folder}/notes-\\xff.md"]
        assert [e.text for e in store.entries("knowledge")] == ["Lyon is in France."]
        assert knowledge.sync(store).unchanged == 1  # the same file: not indexed again

        os.unlink(named)
        assert knowledge.sync(store).removed == [f"{folder}/notes-\\xff.md"]
        assert store.entries("knowledge") == []
    finally:
        store.close()


def test_long_files_are_chunked(tmp_path: Path) -> None:
    paragraphs = [f"Paragraph {n}: " + "tide " * 60 for n in range(40)]
    (tmp_path / "long.md").write_text("\n\n".join(paragraphs))
    store = SQLiteMemory(tmp_path / "m.sqlite")
    Knowledge([tmp_path / "long.md"], chunk_chars=800).sync(store)
    chunks = texts(store)
    assert len(chunks) > 10 and all(len(c) <= 800 for c in chunks)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [("broken.json", "{not json", "cannot be read as JSON")],
)
def test_a_file_that_cannot_be_read_fails_the_run_before_any_model_call(
    server: OpenAICompatibleServer, tmp_path: Path, name: str, content: str, message: str
) -> None:
    (tmp_path / name).write_text(content)
    llm = LLM(model="openai/test-model", api_base=server.base_url, api_key="sk-test-1234567")
    task = Task(description="x", agent=Agent(role="a", goal="b", llm=llm))
    ensemble = Ensemble(tasks=[task], knowledge=[Knowledge([tmp_path / name])])
    with pytest.raises(ConfigurationError, match=message):
        ensemble.run()
    assert server.requests == []


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda p: Knowledge([p / "missing"]), "does not exist"),
        (lambda p: Knowledge([]), "at least one"),
        (lambda p: Knowledge([p], scope=" "), "blank"),
        (lambda p: Task(description="x", knowledge=["docs/"]), "Knowledge"),
    ],
)
def test_bad_knowledge_is_refused_when_built(tmp_path: Path, build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build(tmp_path)


def test_knowledge_is_retrieved_for_the_task_as_data(
    server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    folder = docs(tmp_path)
    llm = LLM(model="openai/test-model", api_base=server.base_url, api_key="sk-test-1234567")
    agent = Agent(role="Support", goal="Answer from the docs", llm=llm)
    task = Task(description="A customer asks: {q}", agent=agent, knowledge=[Knowledge([folder])])
    server.push_text("Five days.")

    Ensemble(tasks=[task]).run({"q": "How long is shipping to Norway?"})  # no store: in memory

    messages = server.requests[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "user"]
    shown = messages[1]["content"]
    assert 'source="knowledge"' in shown and "shipping.txt" in shown
    assert "Shipping to Norway takes five days." in shown
    assert "Norway" not in messages[0]["content"]


def test_ensemble_knowledge_lives_in_the_ensemble_store_and_reaches_every_task(
    server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    store = SQLiteMemory(tmp_path / "m.sqlite")
    llm = LLM(model="openai/test-model", api_base=server.base_url, api_key="sk-test-1234567")
    agent = Agent(role="Support", goal="Answer", llm=llm)
    tasks = [
        Task(description="Returns policy?", agent=agent),
        Task(description="Returns?", agent=agent),
    ]
    server.push_text("30 days.")
    server.push_text("Yes, 30 days.")
    Ensemble(tasks=tasks, memory=store, knowledge=[Knowledge([docs(tmp_path)], scope="docs")]).run()
    assert len(store.entries("docs")) == 5
    assert all("within 30 days" in r["messages"][1]["content"] for r in server.requests)


def tiny_pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` (built by hand: no PDF writer needed)."""
    content = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return out


def test_pdf_files_are_read_with_the_pdf_extra(tmp_path: Path) -> None:
    (tmp_path / "policy.pdf").write_bytes(tiny_pdf("Refunds take ten days."))
    store = SQLiteMemory(tmp_path / "m.sqlite")
    Knowledge([tmp_path]).sync(store)
    assert store.search("knowledge", "how long do refunds take")[0].text == (
        "Refunds take ten days."
    )


HOSTILE_PAGES = [
    "<!--" * 15_000,  # 60 kB: html.parser held the run 30-50 s on pages like these
    "<a" * 30_000,
    "</" * 30_000,
    "<![" * 20_000,
    "&#" * 30_000,
    "<p>ok</p>" + "<" * 60_000,
]


@pytest.mark.parametrize("page", HOSTILE_PAGES, ids=range(len(HOSTILE_PAGES)))
def test_knowledge_reads_html_with_the_bounded_converter_never_html_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page: str
) -> None:
    """Knowledge files are converted by ``agentensemble.untrusted.html_text`` (one forward scan,
    as HttpFetch), never the stdlib's quadratic ``html.parser``: any use of it fails here."""
    import html.parser

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("knowledge used html.parser on an untrusted file")

    monkeypatch.setattr(html.parser.HTMLParser, "feed", refused)
    monkeypatch.setattr(html.parser.HTMLParser, "goahead", refused)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "page.html").write_text(f"<h1>Opening hours</h1><p>9 to 5</p>{page}")
    store = SQLiteMemory(tmp_path / "m.sqlite")
    Knowledge([folder]).sync(store)
    joined = "\n".join(texts(store))
    assert "Opening hours" in joined and "9 to 5" in joined


@pytest.mark.parametrize(
    "text", ["[" * 100_000 + "]" * 100_000, '{"n": ' + "9" * 5000 + "}"], ids=["deep", "digits"]
)
def test_a_hostile_json_knowledge_file_is_refused_naming_it(tmp_path: Path, text: str) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "data.json").write_text(text)
    with pytest.raises(ValueError, match=r"data.json: cannot be read as JSON: (nested|not usable)"):
        Knowledge([folder]).sync(SQLiteMemory(tmp_path / "m.sqlite"))


def many_pages_pdf(pages: int) -> bytes:
    """A PDF of ``pages`` blank pages (pypdf's own writer)."""
    import io

    from pypdf import PdfWriter

    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=72, height=72)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("data", "bounds", "says"),
    [
        (b"%PDF-1.4\nnot a pdf at all", {}, "is not a readable PDF"),
        (b"", {}, "is not a readable PDF"),
        (tiny_pdf("x") * 3, {"max_bytes": 100}, "too large"),
        (many_pages_pdf(5), {"max_pages": 4}, "too long (5 pages; at most 4 are read)"),
        (tiny_pdf("a long line of text"), {"max_chars": 5}, "too much text"),
        (tiny_pdf("on time?"), {"deadline": 0.0}, "too slow to read (stopped at page 1)"),
    ],
    ids=["garbage", "empty", "too large", "too many pages", "too much text", "past its time"],
)
def test_a_hostile_pdf_is_one_error_naming_it(
    data: bytes, bounds: dict[str, Any], says: str
) -> None:
    from agentensemble.untrusted import UntrustedInputError, pdf_text

    with pytest.raises(UntrustedInputError) as caught:
        pdf_text(data, what="evil.pdf", **bounds)
    assert str(caught.value).startswith("evil.pdf is ") and says in str(caught.value)
    assert pdf_text(tiny_pdf("Refunds take ten days.")) == "Refunds take ten days."


def test_a_broken_pdf_fails_the_sync_naming_the_file_before_any_model_call(
    tmp_path: Path,
) -> None:
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 100)
    store = SQLiteMemory(tmp_path / "m.sqlite")
    with pytest.raises(ValueError, match=r"broken\.pdf: cannot be read as PDF: not a readable PDF"):
        Knowledge([tmp_path]).sync(store)


def _sync_within(knowledge: Knowledge, store: SQLiteMemory, seconds: float = 30) -> Any:
    """``knowledge.sync(store)`` in a daemon thread, waited for at most ``seconds``: a reader
    blocked on a FIFO would otherwise hang the test run for ever."""
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append(knowledge.sync(store))
        except BaseException as error:  # handed to the test
            outcome.append(error)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, f"sync did not finish within {seconds} s (blocked on a file)"
    return outcome[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and symlinks: POSIX")
def test_a_knowledge_folder_reads_only_its_own_regular_files(tmp_path: Path) -> None:
    """A downloaded corpus is hostile: a ``notes.md`` linked to a secret outside the folder was
    indexed (and shown to the model), a FIFO named ``pipe.txt`` blocked the sync (so the run)
    for ever. In a folder, only regular files are read: no symlink followed, no FIFO opened."""
    folder = tmp_path / "corpus"
    (folder / "linked").mkdir(parents=True)
    (folder / "returns.md").write_text("Items can be returned within 30 days.")
    outside = tmp_path / "id_rsa"
    outside.write_text("PRIVATE-KEY-MATERIAL-do-not-index")
    (folder / "notes.md").symlink_to(outside)
    (folder / "linked" / "key.txt").symlink_to(outside)
    (folder / "everything.md").symlink_to(tmp_path)  # a folder, as a file name
    os.mkfifo(folder / "pipe.txt")
    store = SQLiteMemory(tmp_path / "m.sqlite")
    report = _sync_within(Knowledge([folder]), store)
    assert report.added == [str(folder / "returns.md")], report
    assert "PRIVATE-KEY-MATERIAL" not in "\n".join(texts(store))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs: POSIX")
def test_a_named_knowledge_file_that_is_no_regular_file_is_refused_naming_it(
    tmp_path: Path,
) -> None:
    os.mkfifo(tmp_path / "pipe.txt")
    store = SQLiteMemory(tmp_path / "m.sqlite")
    error = _sync_within(Knowledge([tmp_path / "pipe.txt"]), store)
    assert isinstance(error, ValueError), error
    assert "pipe.txt: is not a regular file" in str(error)


def test_a_knowledge_file_over_the_bound_is_refused_without_being_read(tmp_path: Path) -> None:
    """The sync read the whole file to hash it before the size bound was checked: a 200 MB
    file cost 200 MB. Now it is refused by its size, its bytes never read."""
    big = tmp_path / "big.txt"
    with big.open("wb") as handle:
        handle.truncate(200 * 1024 * 1024)  # sparse: no disk used
    store = SQLiteMemory(tmp_path / "m.sqlite")
    tracemalloc.start()
    try:
        error = _sync_within(Knowledge([big]), store)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(error, ValueError) and "at most 20971520" in str(error), error
    assert peak < 20 * 1024 * 1024, f"{peak} bytes held to refuse the file"


def test_a_knowledge_folder_nested_past_any_recursion_limit_is_refused_naming_it(
    tmp_path: Path, nested_folders: Callable[[Path, int], Path]
) -> None:
    """A corpus nested 1,200 deep made the walk (os.walk, recursive) raise RecursionError."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    deep = nested_folders(folder, 1_200)
    (deep / "notes.md").write_text("far down")
    with pytest.raises(ValueError) as caught:
        Knowledge([folder]).sync(SQLiteMemory(tmp_path / "m.sqlite"))
    assert str(caught.value).startswith(f"Knowledge: {folder} nests folders over 64 deep")
