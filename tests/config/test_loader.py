"""load_crew (a file or a mapping): agents, tasks, context by name, tools by import path or
built-in name, typed output, guardrails, workflow, model and review settings; every error
names the file, the line and the key."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentensemble import ConfigurationError, ExitReason, tool
from agentensemble.config import ConfigFileError, load_crew
from agentensemble.testing import ScriptedChatModel

CrewFile = Callable[..., Path]

FULL = """
model: openai/gpt-4o-mini
verbose: false
agents:
  researcher:
    role: Researcher
    goal: Find facts about {topic}
    background: Careful.
    tools: [yaml_tools:shout]
    max_iterations: 5
  writer:
    role: Writer
    goal: Write
tasks:
  research:
    description: Research {topic}
    expected_output: Facts
    agent: researcher
  judge:
    description: Is the research good?
    agent: writer
    context: [research]
    output_type: yaml_tools:Verdict
    max_output_retries: 1
  count:
    description: How many facts?
    context: research
    output_type: int
"""


def test_a_full_crew_file_becomes_an_ensemble(crew_file: CrewFile) -> None:
    ensemble = load_crew(crew_file(FULL))

    research, judge, count = ensemble.tasks
    assert [t.name for t in ensemble.tasks] == ["research", "judge", "count"]
    assert research.agent is not None and research.agent.role == "Researcher"
    assert research.agent.tools[0].__name__ == "shout"
    assert research.agent.max_iterations == 5
    assert judge.context == [research] and count.context == [research]
    assert judge.output_type.__name__ == "Verdict" and judge.max_output_retries == 1
    assert count.output_type is int and count.agent is None
    assert ensemble.llm == "openai/gpt-4o-mini"
    assert len(ensemble.agents) == 2


def test_the_loaded_crew_runs(crew_file: CrewFile) -> None:
    ensemble = load_crew(crew_file(FULL))
    model = ScriptedChatModel(["facts", '{"ok": true}', "3"])
    ensemble.llm = model
    for task in ensemble.tasks:
        if task.agent is not None:
            task.agent.llm = model

    output = ensemble.run(inputs={"topic": "AI"})

    assert output.exit_reason is ExitReason.COMPLETED
    assert output.parsed == 3
    assert output.task_outputs[1].parsed.ok is True
    assert "facts" in model.requests[1].last_user_content  # context by name


def test_the_dict_form_takes_the_same_shape() -> None:
    ensemble = load_crew(
        {
            "tasks": [
                {"name": "a", "description": "First"},
                {"name": "b", "description": "Second", "context": ["a"]},
            ]
        }
    )
    first, second = ensemble.tasks
    assert second.context == [first]


def test_review_settings(crew_file: CrewFile) -> None:
    path = crew_file(
        """
        review: {policy: after_every_task, handler: auto}
        tasks:
          only: {description: Do it, review: {prompt: 'Looks right?', timeout: 30}}
        """
    )
    ensemble = load_crew(path)
    assert type(ensemble.review_handler).__name__ == "AutoApproveReviewHandler"
    assert ensemble.review_policy == "after_every_task"
    review = ensemble.tasks[0].review
    assert review.prompt == "Looks right?" and review.timeout.total_seconds() == 30


def test_built_in_tools_are_found_by_name_when_the_module_exists(
    crew_file: CrewFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    @tool
    def calculator(expression: str) -> str:
        """Evaluate arithmetic."""
        return expression

    class Calculator:  # stands in for agentensemble.tools.builtin.Calculator
        def __new__(cls) -> Any:
            return calculator

    fake = types.ModuleType("agentensemble.tools.builtin")
    fake.Calculator = Calculator  # type: ignore[attr-defined]
    fake.__all__ = ["Calculator"]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agentensemble.tools.builtin", fake)
    path = crew_file(
        """
        agents:
          a: {role: R, goal: G, tools: [calculator]}
        tasks:
          t: {description: D, agent: a}
        """
    )
    agent = load_crew(path).agents[0]
    assert agent.tools == [calculator]


ERRORS = [
    # (crew file, line, key, words in the message)
    (
        "agents:\n  a: {role: R, goal: G, backstory: B}\ntasks: [{description: D}]\n",
        2,
        "agents.a.backstory",
        "use background=",
    ),
    (
        "agents:\n  a:\n    role: R\ntasks: [{description: D, agent: a}]\n",
        2,
        "agents.a.goal",
        "Field required",
    ),
    (
        "tasks:\n  a: {description: D, agent: nobody}\n",
        2,
        "tasks.a.agent",
        "unknown agent 'nobody'",
    ),
    (
        "tasks:\n  a: {description: D}\n  b:\n    description: E\n    context: [c]\n",
        5,
        "tasks.b.context[0]",
        "unknown task (an earlier one) 'c' (known: a)",
    ),
    (
        "tasks:\n  a: {description: D, context: [b]}\n  b: {description: E}\n",
        2,
        "tasks.a.context[0]",
        "unknown task",
    ),
    (
        "tasks:\n  a: {description: D, tools: [yaml_tools:nothing]}\n",
        2,
        "tasks.a.tools[0]",
        "has no attribute 'nothing'",
    ),
    (
        "tasks:\n  a: {description: D, tools: [no_such_builtin]}\n",
        2,
        "tasks.a.tools[0]",
        "unknown tool 'no_such_builtin'",
    ),
    (
        "tasks:\n  a: {description: D, tools: [yaml_tools:NOT_A_TOOL]}\n",
        2,
        "tasks.a.tools[0]",
        "is not a tool",
    ),
    (
        "tasks:\n  a: {description: D, output_type: yaml_tools:Nope}\n",
        2,
        "tasks.a.output_type",
        "no attribute 'Nope'",
    ),
    ("tasks:\n  a: {description: '  '}\n", 2, "tasks.a.description", "non-blank"),
    ("tasks:\n  a: {description: D}\n  a: {description: E}\n", 3, "tasks.a", "appears twice"),
    ("tasks:\n  a: {description: D\n", 3, "", "not valid YAML"),
    ("process: sequential\ntasks: [{description: D}]\n", 1, "process", "use workflow="),
    ("tasks: []\n", 1, "tasks", "at least one task"),
    ("- just a list\n", 1, "", "a crew file is a mapping"),
    ("workflow: sideways\ntasks: [{description: D}]\n", None, "", "workflow"),
    (
        "review: {handler: carrier-pigeon}\ntasks: [{description: D}]\n",
        1,
        "review.handler",
        "unknown review handler",
    ),
]


@pytest.mark.parametrize(("text", "line", "key", "words"), ERRORS)
def test_errors_point_at_file_line_and_key(
    crew_file: CrewFile, text: str, line: int | None, key: str, words: str
) -> None:
    path = crew_file(text)
    with pytest.raises(ConfigFileError) as info:
        load_crew(path)
    error = info.value
    assert isinstance(error, ConfigurationError)
    assert error.file == str(path)
    if line is not None:
        assert error.line == line, str(error)
        assert str(error).startswith(f"{path}:{line}: ")
    if key:
        assert error.key == key, str(error)
    assert words in str(error)


def test_a_missing_file_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="cannot read the file"):
        load_crew(tmp_path / "absent.yaml")


def test_unsafe_tags_are_refused(crew_file: CrewFile) -> None:
    path = crew_file("tasks:\n  a: {description: !!python/object/apply:os.getcwd []}\n")
    with pytest.raises(ConfigFileError, match="is not allowed in a crew file"):
        load_crew(path)
    scalar = crew_file("tasks:\n  a: {description: !!python/name:os.getcwd ''}\n")
    with pytest.raises(ConfigFileError, match="cannot read this value"):
        load_crew(scalar)


@pytest.mark.parametrize(
    "text",
    [
        # nine levels of ten aliases each: a billion values if expanded
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n"
            for i in range(8)
        )
        + "tasks: [{description: D}]\n",
        "a: &a [*a]\ntasks: [{description: D}]\n",  # an alias inside itself
    ],
)
def test_alias_bombs_are_refused_quickly(crew_file: CrewFile, text: str) -> None:
    with pytest.raises(ConfigFileError, match=r"too large or too deep|not valid YAML"):
        load_crew(crew_file(text))


def test_the_real_built_in_tools_by_name_with_arguments(tmp_path: Path) -> None:
    ensemble = load_crew(
        {
            "agents": {
                "a": {
                    "role": "R",
                    "goal": "G",
                    "tools": [
                        "calculator",
                        "CurrentDateTime",
                        {"FileRead": {"root": str(tmp_path)}},
                    ],
                }
            },
            "tasks": [{"description": "D", "agent": "a"}],
        }
    )
    assert [type(t).__name__ for t in ensemble.agents[0].tools] == [
        "Calculator",
        "CurrentDateTime",
        "FileRead",
    ]
    with pytest.raises(ConfigFileError, match=r"tasks\[0\]\.tools\[0\]: unknown tool 'calculater'"):
        load_crew({"tasks": [{"description": "D", "tools": ["calculater"]}]})


def test_other_ensemble_settings_pass_through_and_are_checked() -> None:
    ensemble = load_crew(
        {"workflow": "parallel", "max_concurrency": 2, "tasks": [{"description": "D"}]}
    )
    assert ensemble.workflow.value == "parallel" and ensemble.max_concurrency == 2
    with pytest.raises(
        ConfigFileError, match=r"<dict>: max_concurrency: .*greater than or equal to 1"
    ):
        load_crew({"max_concurrency": 0, "tasks": [{"description": "D"}]})
