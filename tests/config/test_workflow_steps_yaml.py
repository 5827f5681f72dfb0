"""Loops, graphs, nested ensembles and for_each in crew files; conditions in the safe syntax;
errors at file:line; ``agentensemble validate`` checks them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentensemble import Ensemble, Graph, Loop, Workflow
from agentensemble.cli import EXIT_OK, EXIT_USAGE, main
from agentensemble.config import ensemble_from_yaml, load_crew
from agentensemble.config._positions import ConfigFileError
from agentensemble.testing import ScriptedChatModel

CrewFile = Callable[..., Path]

CREW = """
tasks:
  gather:
    description: List facts about {topic}
  polish:
    loop:
      max_iterations: 3
      until: critique.approved == true
      context: [gather]
      body:
        write:
          description: Write about {topic}
        critique:
          description: Critique the text
          context: [write]
          output_type: tests.config.steps_types:Verdict
  support:
    graph:
      start: triage
      max_steps: 6
      states:
        triage: {description: Triage}
        answer: {description: Answer}
      edges:
        - {from: triage, to: answer}
        - {from: answer, to: triage, when: "output contains 'AGAIN'"}
        - {from: answer, to: END}
  research:
    ensemble:
      workflow: parallel
      tasks:
        web: {description: Search the web}
        papers: {description: Search papers}
  per_doc:
    description: Summarise {item}
    for_each: docs
  report:
    description: Write the report
    context: [polish, support, research, per_doc]
"""


def test_a_crew_file_expresses_every_step_kind_and_runs(crew_file: CrewFile) -> None:
    ensemble = load_crew(crew_file(CREW))
    gather, polish, support, research, per_doc, report = ensemble.tasks
    assert isinstance(polish, Loop) and polish.context == [gather]
    assert isinstance(support, Graph) and support.edges[-1].target == Graph.END
    assert isinstance(research, Ensemble) and research.workflow is Workflow.PARALLEL
    assert per_doc.for_each == "docs"
    assert report.context == [polish, support, research, per_doc]

    ensemble.llm = ScriptedChatModel(
        [
            "facts",
            "draft 1",
            '{"approved": false, "remarks": "more"}',
            "draft 2",
            '{"approved": true, "remarks": "ok"}',
            "billing",
            "AGAIN",
            "billing 2",
            "done",
            "web",
            "papers",
            "s1",
            "s2",
            "the report",
        ]
    )
    out = ensemble.run({"topic": "owls", "docs": ["a", "b"]})
    assert out.loops["polish"].iterations == 2
    assert out.graphs["support"].path == ["triage", "answer", "triage", "answer"]
    assert out.raw == "the report"


ERRORS = [
    (
        "tasks:\n  l:\n    loop:\n      body:\n        a: {description: A}\n"
        "      until: b.ok == true\n",
        6,
        "unknown name 'b'",
    ),
    ("tasks:\n  l:\n    loop:\n      max_iterations: 2\n", 3, "needs a body"),
    (
        "tasks:\n  l:\n    loop:\n      body: {a: {description: A}}\n      max_iterations: 0\n",
        3,
        "max_iterations must be a whole number of at least 1",
    ),
    (
        "tasks:\n  g:\n    graph:\n      start: a\n      states: {a: {description: A}}\n"
        "      edges:\n        - {from: a, to: nowhere}\n",
        3,
        "leads nowhere",
    ),
    (
        "tasks:\n  g:\n    graph:\n      start: a\n      states: {a: {description: A}}\n"
        "      edges:\n        - {from: a, to: END, when: output =! 'x'}\n",
        7,
        "bad condition",
    ),
    (
        "tasks:\n  l:\n    loop: {body: {a: {description: A}}}\n    max_iterations: 3\n",
        4,
        "holds only loop",
    ),
    (
        "tasks:\n  l:\n    loop:\n      body:\n        a: {description: A}\n      sideways: 1\n",
        6,
        "Loop has no setting 'sideways'",
    ),
]


@pytest.mark.parametrize(("text", "line", "words"), ERRORS)
def test_bad_steps_are_errors_at_file_and_line(
    crew_file: CrewFile, text: str, line: int, words: str
) -> None:
    path = crew_file(text)
    with pytest.raises(ConfigFileError) as info:
        load_crew(path)
    assert info.value.line == line, str(info.value)
    assert str(info.value).startswith(f"{path}:{line}: ")
    assert words in str(info.value)


def test_validate_checks_steps_and_names_list_inputs(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(crew_file(CREW)), "--model", "scripted"]) == EXIT_OK
    assert "inputs: docs, topic" in capsys.readouterr().out
    bad = crew_file(ERRORS[0][0])
    assert main(["validate", str(bad), "--model", "scripted"]) == EXIT_USAGE
    assert f"{bad}:6:" in capsys.readouterr().err


def test_agentensemble_run_runs_a_loop_crew_offline(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str]
) -> None:
    crew = (
        "tasks:\n  polish:\n    loop:\n      max_iterations: 2\n"
        "      until: last contains 'never there'\n"
        "      body:\n        write: {description: Write a line}\n"
    )
    assert main(["run", str(crew_file(crew)), "--model", "scripted"]) == EXIT_OK
    out, err = capsys.readouterr()
    assert "(scripted answer) Write a line" in out
    assert "loop polish: iteration 2 done, stopped by max_iterations" in err


def test_a_crew_files_fan_out_agent_may_use_item(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str]
) -> None:
    crew = (
        "agents:\n  reader: {role: 'Reader of document {index}', goal: 'Understand {item}'}\n"
        "tasks:\n  per_doc: {description: Summarise it, agent: reader, for_each: docs}\n"
    )
    path = str(crew_file(crew))
    assert main(["validate", path, "--model", "scripted"]) == EXIT_OK
    assert "inputs: docs" in capsys.readouterr().out
    model = ScriptedChatModel(["x", "y"])
    out = ensemble_from_yaml(path, {"llm": model}).run({"docs": ["a", "b"]})
    assert [o.agent_role for o in out.task_outputs] == [
        "Reader of document 0",
        "Reader of document 1",
    ]
