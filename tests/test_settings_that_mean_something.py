"""Settings that were accepted and then ignored or failed late.

Attacks: a class where an instance is expected (``review_handler=AutoApproveReviewHandler``,
``llm=LLM``, ``listeners=[MyListener]``) passed validation because the class has the methods,
then failed at the first call, after tokens were spent. ``Agent(verbose=True)`` printed
nothing. Now classes are refused at construction naming the fix, and a verbose agent prints its
prompts and answers on stderr, redacted and with every character that could fool a terminal
escaped.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from agentensemble import (
    LLM,
    Agent,
    ConfigurationError,
    ConsoleProgressListener,
    Ensemble,
    Task,
    tool,
)
from agentensemble.logging import register_secret
from agentensemble.testing import ScriptedChatModel, tool_call
from agentensemble_review import AutoApproveReviewHandler


class MyListener:
    def on_event(self, event: object) -> None:
        pass


class MyTool:
    @tool
    def look(self, query: str) -> str:
        """Look something up."""
        return query


HANDLER_TASK = Task(description="Do", handler=lambda ctx: "done")

CLASSES: list[tuple[str, Any, str]] = [
    (
        "review_handler",
        lambda: Ensemble(tasks=[HANDLER_TASK], review_handler=AutoApproveReviewHandler),
        "pass an instance: AutoApproveReviewHandler()",
    ),
    ("llm", lambda: Ensemble(tasks=[HANDLER_TASK], llm=LLM), "pass an instance: LLM(model=...)"),
    (
        "listeners",
        lambda: Ensemble(tasks=[HANDLER_TASK], listeners=[MyListener]),
        "pass an instance: MyListener()",
    ),
    (
        "listeners",
        lambda: Ensemble(tasks=[HANDLER_TASK], listeners=[ConsoleProgressListener]),
        "pass an instance: ConsoleProgressListener()",
    ),
    (
        "llm",
        lambda: Agent(role="r", goal="g", llm=ScriptedChatModel),
        "pass an instance: ScriptedChatModel()",
    ),
    ("handler", lambda: Task(description="Do", handler=MyListener), "pass a function"),
]


@pytest.mark.parametrize(("field", "build", "fix"), CLASSES, ids=[c[2] for c in CLASSES])
def test_a_class_where_an_instance_belongs_is_refused_at_construction_naming_the_fix(
    field: str, build: Any, fix: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        build()
    assert caught.value.errors()[0]["loc"][0] == field
    assert fix in str(caught.value)


def test_a_tool_class_where_an_instance_belongs_is_refused_at_construction() -> None:
    with pytest.raises(ConfigurationError, match=r"Got the class 'MyTool', not an instance"):
        Agent(role="r", goal="g", tools=[MyTool])


SECRET = "sk-verbose-test-0123456789"


def verbose_run(verbose: bool) -> None:
    register_secret(SECRET)
    model = ScriptedChatModel(
        [
            tool_call("look", {"query": "q\u202eevil"}),
            f"answer \x1b[2J with {SECRET} and \ud800 and zero\u200bwidth \u2066isolate",
        ]
    )
    agent = Agent(
        role="Researcher",
        goal="Find things",
        tools=[MyTool()],
        llm=model,
        verbose=verbose,
    )
    Ensemble(tasks=[Task(description="Research \u202e the topic", agent=agent)]).run()


def test_a_verbose_agent_prints_its_prompts_and_answers_on_stderr_escaped_and_redacted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    verbose_run(verbose=True)
    out, err = capsys.readouterr()
    assert out == ""
    assert "[Researcher] system prompt:" in err
    assert "[Researcher] prompt: " in err
    assert "Research \\u202e the topic" in err
    assert "[Researcher] tool call: look(" in err
    assert "[Researcher] tool result: q\\u202eevil" in err
    assert "[Researcher] answer: answer \\x1b[2J with *** and \\ud800 and zero\\u200bwidth" in err
    assert "\\u2066isolate" in err
    for raw in ("\u202e", "\x1b", "\ud800", "\u200b", "\u2066", SECRET):
        assert raw not in err


def test_an_agent_that_is_not_verbose_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    verbose_run(verbose=False)
    assert capsys.readouterr() == ("", "")


def test_verbose_output_never_fails_on_a_stream_that_cannot_encode_the_text() -> None:
    import io

    from agentensemble.execution._verbose import Transcript
    from agentensemble.llm.types import ChatResponse

    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    Transcript("Caf\u00e9", stream).answer(ChatResponse(content="na\u00efve \U0001f600 \ud800"))
    stream.flush()
    assert raw.getvalue().decode("ascii") == ("[Caf\\xe9] answer: na\\xefve \\U0001f600 \\ud800\n")


def test_a_verbose_worker_in_a_hierarchical_run_prints_its_delegated_work(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from agentensemble import Workflow

    manager = ScriptedChatModel(
        [
            tool_call("delegate_task", {"agent_role": "Researcher", "instructions": "Dig"}),
            "Report",
        ]
    )
    researcher = Agent(
        role="Researcher", goal="Find facts", llm=ScriptedChatModel(["facts"]), verbose=True
    )
    quiet = Agent(role="Writer", goal="Write", llm=ScriptedChatModel())
    Ensemble(
        tasks=[Task(description="Write a report")],
        agents=[researcher, quiet],
        workflow=Workflow.HIERARCHICAL,
        manager_llm=manager,
    ).run()
    err = capsys.readouterr().err
    assert "[Researcher] prompt: " in err and "Dig" in err
    assert "[Researcher] answer: facts" in err
    assert "[Writer]" not in err
