"""Memory scopes that do what the docs say: names filled from the run's inputs like every other
template, read-only scopes, what is written and what is searched chosen per scope. Real HTTP to
a local OpenAI-compatible server, real SQLite files, a second process where it matters."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentensemble import LLM, Agent, Ensemble, PromptTemplateError, Task
from agentensemble.config import load_crew
from agentensemble.memory import MemoryScope, SQLiteMemory
from agentensemble.testing import OpenAICompatibleServer


@pytest.fixture
def server() -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer() as running:
        yield running


def model(server: OpenAICompatibleServer) -> LLM:
    return LLM(model="openai/test-model", api_base=server.base_url, api_key="sk-scope-test-key")


def one_task(
    server: OpenAICompatibleServer, store: Any, memory: list[Any], **task: Any
) -> Ensemble:
    agent = Agent(role="Support agent", goal="Help customers", llm=model(server))
    work = Task(description="Answer {customer}: {question}", agent=agent, memory=memory, **task)
    return Ensemble(tasks=[work], memory=store)


def shown_memory(request: dict[str, Any]) -> str:
    """The retrieved-memory block of a request ('' when none was shown)."""
    blocks = [
        m["content"]
        for m in request["messages"]
        if m["role"] == "user" and m["content"].startswith("## Retrieved memory")
    ]
    return blocks[0] if blocks else ""


def test_a_scope_name_is_a_template_filled_from_the_inputs(
    server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    store = SQLiteMemory(tmp_path / "memory.sqlite")
    ensemble = one_task(server, store, ["customer-{customer}"])
    server.push_text("Ada prefers email.")
    ensemble.run({"customer": "ada", "question": "how to reach you?"})
    server.push_text("Bob prefers phone calls.")
    ensemble.run({"customer": "bob", "question": "how to reach you?"})

    assert [e.text for e in store.entries("customer-ada")] == ["Ada prefers email."]
    assert [e.text for e in store.entries("customer-bob")] == ["Bob prefers phone calls."]
    assert store.entries("customer-{customer}") == []  # never the literal name

    server.push_text("Emailing you, Ada.")
    ensemble.run({"customer": "ada", "question": "how to reach you?"})
    memory = shown_memory(server.requests[-1])
    assert "Ada prefers email." in memory and "Bob" not in memory


def test_a_scope_with_a_variable_the_inputs_lack_is_refused_before_any_request(
    server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    store = SQLiteMemory(tmp_path / "memory.sqlite")
    ensemble = one_task(server, store, ["customer-{customer_id}"])
    with pytest.raises(PromptTemplateError, match="customer_id"):
        ensemble.run({"customer": "ada", "question": "q"})
    query = one_task(server, store, [MemoryScope("notes", query="about {topic}")])
    with pytest.raises(PromptTemplateError, match="topic"):
        query.run({"customer": "ada", "question": "q"})
    assert server.requests == []


def test_a_read_only_scope_is_recalled_and_never_written(
    server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    store = SQLiteMemory(tmp_path / "memory.sqlite")
    store.add("policies", "Refunds for ada are allowed within 30 days")
    ensemble = one_task(
        server, store, [MemoryScope("policies", write=False), "customer-{customer}"]
    )
    server.push_text("You can get a refund.")
    ensemble.run({"customer": "ada", "question": "can ada get a refund?"})

    assert "Refunds for ada are allowed within 30 days" in shown_memory(server.requests[-1])
    assert [e.text for e in store.entries("policies")] == [
        "Refunds for ada are allowed within 30 days"
    ]
    assert [e.text for e in store.entries("customer-ada")] == ["You can get a refund."]


def test_write_picks_what_is_kept_and_none_keeps_nothing(
    server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    store = SQLiteMemory(tmp_path / "memory.sqlite")

    def lessons(output: str) -> str | None:
        picked = [line for line in output.splitlines() if line.startswith("Lesson:")]
        return "\n".join(picked) or None

    ensemble = one_task(server, store, [MemoryScope("lessons", write=lessons)])
    server.push_text("Done.\nLesson: ask for the order number first.\nBye.")
    ensemble.run({"customer": "ada", "question": "where is my order?"})
    server.push_text("Done, nothing learnt.")
    ensemble.run({"customer": "bob", "question": "hello"})

    assert [e.text for e in store.entries("lessons")] == ["Lesson: ask for the order number first."]


def test_the_query_names_what_to_recall_not_the_task_s_own_words(
    server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    """The writer-critic case: searched with its own description, the writer's scope gives
    back its drafts; a query naming the critic's remarks gives back the remarks."""
    store = SQLiteMemory(tmp_path / "memory.sqlite")
    for draft in range(3):
        store.add("feedback", f"Draft {draft}: an essay about tea for the blog, first version")
    store.add("feedback", "Critic remarks: the opening is weak; cite a source for every claim")

    def run(memory: list[Any]) -> str:
        server.push_text("A new draft.")
        agent = Agent(role="Writer", goal="Write", llm=model(server))
        task = Task(description="Write an essay about {topic} for the blog", agent=agent)
        Ensemble(tasks=[task.model_copy(update={"memory": memory})], memory=store).run(
            {"topic": "tea"}
        )
        return shown_memory(server.requests[-1])

    by_description = run([MemoryScope("feedback", write=False)])
    first = by_description.split("<entry", 2)[1]
    assert "Draft" in first  # the task's own words find its own drafts first

    by_query = run([MemoryScope("feedback", write=False, query="critic remarks")])
    first = by_query.split("<entry", 2)[1]
    assert "Critic remarks: the opening is weak" in first

    by_callable = run(
        [MemoryScope("feedback", write=False, query=lambda description: "remarks weak opening")]
    )
    assert "Critic remarks" in by_callable.split("<entry", 2)[1]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: MemoryScope(" "), "non-blank scope name"),
        (lambda: MemoryScope("notes", write="yes"), r"True, False \(read-only\) or a callable"),
        (lambda: MemoryScope("notes", query=""), "non-blank text or a callable"),
        (lambda: MemoryScope("notes", query=3), "non-blank text or a callable"),
        (
            lambda: Task(description="d", memory=["notes", MemoryScope("notes", write=False)]),
            "listed twice with different settings",
        ),
        (lambda: Task(description="d", memory=[3]), "non-blank strings or MemoryScope"),
    ],
)
def test_bad_scopes_fail_when_built(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


def test_a_crew_file_writes_read_only_scopes_and_queries(
    server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    crew = tmp_path / "crew.yaml"
    crew.write_text(
        textwrap.dedent(
            f"""
            memory: memory.sqlite
            agents:
              writer: {{role: Writer, goal: Write, llm: {{model: openai/test-model,
                        api_base: "{server.base_url}", api_key: sk-scope-test-key}}}}
            tasks:
              draft:
                description: Write about {{topic}}
                agent: writer
                memory:
                  - drafts-{{topic}}
                  - {{scope: feedback, write: false, query: "critic remarks on {{topic}}"}}
            """
        )
    )
    ensemble = load_crew(crew)
    store = ensemble.memory
    store.add("feedback", "Critic remarks on tea: too long")
    server.push_text("Tea draft")
    ensemble.run({"topic": "tea"})

    assert "Critic remarks on tea: too long" in shown_memory(server.requests[-1])
    assert [e.text for e in store.entries("drafts-tea")] == ["Tea draft"]
    assert len(store.entries("feedback")) == 1

    bad = crew.read_text().replace("write: false", "write: maybe")
    crew.write_text(bad)
    with pytest.raises(Exception, match="write takes true or false"):
        load_crew(crew)


def test_what_one_process_wrote_in_a_filled_scope_another_recalls(
    server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    """The critic runs in one process and writes its remarks for one customer's document; the
    writer, in another process, recalls them through a read-only, queried scope."""
    path = tmp_path / "memory.sqlite"
    script = tmp_path / "critic.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from agentensemble import LLM, Agent, Ensemble, Task
            from agentensemble.memory import SQLiteMemory

            llm = LLM(model="openai/test-model", api_base="{server.base_url}", api_key="sk-x")
            critic = Agent(role="Critic", goal="Review", llm=llm)
            task = Task(description="Review {{doc}}", agent=critic, memory=["feedback-{{doc}}"])
            Ensemble(tasks=[task], memory=SQLiteMemory({str(path)!r})).run({{"doc": "essay-7"}})
            """
        )
    )
    server.push_text("Critic remarks: cut the second paragraph")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr

    server.push_text("Revised.")
    writer = Agent(role="Writer", goal="Write", llm=model(server))
    revise = Task(
        description="Revise {doc}",
        agent=writer,
        memory=[MemoryScope("feedback-{doc}", write=False, query="critic remarks")],
    )
    Ensemble(tasks=[revise], memory=SQLiteMemory(path)).run({"doc": "essay-7"})

    assert "cut the second paragraph" in shown_memory(server.requests[-1])
    assert [e.text for e in SQLiteMemory(path).entries("feedback-essay-7")] == [
        "Critic remarks: cut the second paragraph"
    ]
