"""Typed answers written by a hostile model: parsing is linear and bounded, and every parse
failure is a correction turn, never a frozen process or a failed task."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from agentensemble import Agent, Ensemble, OutputParsingError, Task
from agentensemble.execution.structured import parse_output
from agentensemble.testing import ScriptedChatModel, tool_call
from agentensemble.tools import AgentTool, ReturnBehavior, ToolResult

DEEP = "[" * 100_000 + "]" * 100_000
BOUND = 30.0  # a safety bound on a hang, not a speed target: the attack took hours


class Report(BaseModel):
    title: str
    score: int


def finishes(fn: Callable[[], Any]) -> Any:
    """``fn()``'s result or exception, failing the test if it has not returned within BOUND."""
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append(("ok", fn()))
        except BaseException as exc:
            outcome.append(("raised", exc))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(BOUND)
    assert outcome, f"still parsing after {BOUND} s"
    kind, value = outcome[0]
    if kind == "raised":
        raise value
    return value


@pytest.mark.parametrize(
    "answer",
    [
        "```" + " " * 300_000,  # an opened fence: a backtracking regex ran for hours
        "```json" + " " * 300_000 + "x",
        "```" + "\n" * 300_000,
        "{" * 300_000,
        " " * 300_000 + "```",
    ],
)
def test_a_fence_followed_by_whitespace_does_not_freeze_the_parser(answer: str) -> None:
    with pytest.raises(OutputParsingError):
        finishes(lambda: parse_output(answer, Report))


def test_a_fenced_answer_still_parses() -> None:
    answer = 'Here:\n```json\n{"title": "A", "score": 1}\n```\n and a second ```fence```'
    assert parse_output(answer, Report) == Report(title="A", score=1)


@pytest.mark.parametrize("answer", [DEEP, '{"title": ' + DEEP + "}", "```" + DEEP + "```"])
def test_a_deeply_nested_answer_is_a_parse_error_naming_the_depth(answer: str) -> None:
    with pytest.raises(OutputParsingError, match="nested too deeply"):
        parse_output(answer, Report)


def test_a_deeply_nested_answer_gets_a_correction_turn() -> None:
    model = ScriptedChatModel([DEEP, '{"title": "T", "score": 1}'])
    agent = Agent(role="Analyst", goal="Answer", llm=model)
    output = Ensemble(tasks=[Task(description="d", agent=agent, output_type=Report)]).run()

    assert output.parsed == Report(title="T", score=1)
    correction = model.requests[1].last_user_content
    assert "could not be used" in correction and "nested too deeply" in correction


class DeepLookup(AgentTool):
    name = "lookup"
    description = "Looks a key up."
    return_behavior = ReturnBehavior.IMMEDIATE

    def execute(self, input: str) -> ToolResult:
        return ToolResult.success(DEEP)


def test_a_deeply_nested_immediate_tool_output_does_not_fail_the_task() -> None:
    model = ScriptedChatModel([tool_call("lookup", {"input": "a"})])
    agent = Agent(role="Analyst", goal="Answer", llm=model, tools=[DeepLookup()])
    output = Ensemble(tasks=[Task(description="d", agent=agent, output_type=Report)]).run()

    assert output.task_outputs[0].returned_immediately
    assert output.raw == DEEP
    assert output.parsed is None  # not the output type: kept as raw text, logged


def test_an_oversized_answer_is_a_parse_error() -> None:
    with pytest.raises(OutputParsingError, match="too large"):
        parse_output('{"title": "' + "x" * 3_000_000 + '", "score": 1}', Report)
