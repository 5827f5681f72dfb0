"""HumanInputTool through whole ensembles: the agent asks, the human's decision is the answer."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest

from agentensemble import (
    Agent,
    ConfigurationError,
    Ensemble,
    EnsembleOutput,
    ExitReason,
    Task,
    TaskExecutionError,
)
from agentensemble.testing import ScriptedChatModel, text, tool_call
from agentensemble_review import (
    ConsoleReviewHandler,
    Continue,
    Edit,
    ExitEarly,
    HumanInputTool,
    OnTimeoutAction,
    ReviewDecision,
    ReviewRequest,
    ReviewTimeoutError,
    ReviewTiming,
    ScriptedReviewHandler,
)
from agentensemble_review.human_input import NO_ANSWER

QUESTION = "Which year's figures should the report use?"
TASK = "Write the quarterly report"


def run_asking(
    tool: HumanInputTool, reviewer: object, *, after: str = "Report written."
) -> tuple[EnsembleOutput, ScriptedChatModel]:
    """One task whose agent asks ``QUESTION`` once, then answers ``after``."""
    model = ScriptedChatModel([tool_call(tool.name, {"input": QUESTION}), text(after)])
    agent = Agent(role="Analyst", goal="Report", tools=[tool], llm=model)
    result = Ensemble(tasks=[Task(description=TASK, agent=agent)], review_handler=reviewer).run()
    model.assert_all_consumed()
    return result, model


def answer_seen(model: ScriptedChatModel) -> str:
    """What the model got back for its question (the tool message after the call)."""
    (content,) = model.requests[1].tool_results
    return content


def test_an_edit_is_the_answer_and_the_question_is_asked_once() -> None:
    reviewer = ScriptedReviewHandler([Edit("Use the 2023 figures")])
    result, model = run_asking(HumanInputTool(), reviewer)
    assert answer_seen(model) == "Use the 2023 figures"
    (record,) = result.task_outputs[0].tool_calls
    assert record.is_success and record.output == "Use the 2023 figures"
    assert result.exit_reason is ExitReason.COMPLETED
    (request,) = reviewer.requests  # no separate approval of the call in front of the question
    assert request.timing is ReviewTiming.DURING_EXECUTION
    assert request.tool_name == "ask_human"
    assert request.output == QUESTION
    assert request.task_description == TASK
    assert request.prompt is not None and "asks you" in request.prompt
    assert "type e and your answer" in request.prompt
    assert request.timeout == timedelta(minutes=5)
    assert request.on_timeout is OnTimeoutAction.EXIT_EARLY


def test_continue_gives_the_neutral_no_answer_text() -> None:
    result, model = run_asking(HumanInputTool(), ScriptedReviewHandler([Continue()]))
    assert answer_seen(model) == NO_ANSWER
    assert result.task_outputs[0].tool_calls[0].is_success


def test_a_blank_edit_counts_as_no_answer() -> None:
    _, model = run_asking(HumanInputTool(), ScriptedReviewHandler([Edit("   ")]))
    assert answer_seen(model) == NO_ANSWER


def test_exit_early_is_a_declined_answer_the_agent_adapts_to() -> None:
    reviewer = ScriptedReviewHandler([ExitEarly("Not my call")])
    result, model = run_asking(
        HumanInputTool(), reviewer, after="Used the latest figures, as the human declined."
    )
    assert answer_seen(model) == "Error: The human declined to answer: Not my call"
    assert not result.task_outputs[0].tool_calls[0].is_success
    assert result.raw == "Used the latest figures, as the human declined."
    assert result.exit_reason is ExitReason.COMPLETED  # a declined question never stops the run


def test_exit_early_without_a_reason() -> None:
    _, model = run_asking(HumanInputTool(), ScriptedReviewHandler([ExitEarly()]))
    assert answer_seen(model) == "Error: The human declined to answer: no reason given"


def test_the_agent_can_ask_again_and_each_question_is_a_review() -> None:
    model = ScriptedChatModel(
        [
            tool_call("ask_human", {"input": "First question?"}),
            tool_call("ask_human", {"question": "Second question?"}),  # a lenient shape
            "done",
        ]
    )
    reviewer = ScriptedReviewHandler([ExitEarly("later"), Edit("42")])
    agent = Agent(role="Analyst", goal="Report", tools=[HumanInputTool()], llm=model)
    Ensemble(tasks=[Task(description=TASK, agent=agent)], review_handler=reviewer).run()
    assert [r.output for r in reviewer.requests] == ["First question?", "Second question?"]
    assert model.requests[2].tool_results == ["42"]
    reviewer.assert_all_used()


class BlockedHuman:
    """A reviewer who never answers in time (released at teardown, so no thread lingers)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def review(self, request: ReviewRequest) -> ReviewDecision:
        self.release.wait(10)
        return Edit("too late")


@pytest.fixture
def blocked() -> Iterator[BlockedHuman]:
    human = BlockedHuman()
    yield human
    human.release.set()


def test_timeout_with_continue_gives_the_no_answer_text(blocked: BlockedHuman) -> None:
    tool = HumanInputTool(timeout=0.2, on_timeout=OnTimeoutAction.CONTINUE)
    result, model = run_asking(tool, blocked)
    assert answer_seen(model) == NO_ANSWER
    assert result.exit_reason is ExitReason.COMPLETED


def test_timeout_with_exit_early_is_a_failure_saying_no_answer_came(
    blocked: BlockedHuman,
) -> None:
    result, model = run_asking(HumanInputTool(timeout=timedelta(seconds=0.2)), blocked)
    assert answer_seen(model).startswith("Error: The human did not answer: Review timed out")
    assert result.exit_reason is ExitReason.COMPLETED  # the question failed; the task went on


def test_timeout_with_fail_stops_the_run(blocked: BlockedHuman) -> None:
    model = ScriptedChatModel([tool_call("ask_human", {"input": QUESTION}), "never used"])
    tool = HumanInputTool(timeout=0.2, on_timeout="fail")
    agent = Agent(role="Analyst", goal="Report", tools=[tool], llm=model)
    with pytest.raises(TaskExecutionError) as info:
        Ensemble(tasks=[Task(description=TASK, agent=agent)], review_handler=blocked).run()
    assert isinstance(info.value.__cause__, ReviewTimeoutError)
    assert len(model.requests) == 1


def test_no_handler_is_a_configuration_error_before_any_model_call() -> None:
    model = ScriptedChatModel([tool_call("ask_human", {"input": QUESTION}), "done"])
    agent = Agent(role="Analyst", goal="Report", tools=[HumanInputTool()], llm=model)
    with pytest.raises(ConfigurationError, match="ask_human"):
        Ensemble(tasks=[Task(description=TASK, agent=agent)])
    assert model.requests == []


def test_no_handler_when_called_outside_a_run_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="no review handler"):
        HumanInputTool().execute("Anyone there?")


def test_name_description_and_prompt_are_configurable() -> None:
    tool = HumanInputTool(
        "ask_editor", "Ask the editor about style.", prompt="Answer with e <answer>."
    )
    reviewer = ScriptedReviewHandler([Edit("Short sentences.")])
    result, model = run_asking(tool, reviewer)
    (spec,) = model.requests[0].tools or []
    assert spec["function"]["name"] == "ask_editor"
    assert spec["function"]["description"] == "Ask the editor about style."
    assert reviewer.requests[0].tool_name == "ask_editor"
    assert reviewer.requests[0].prompt == "Answer with e <answer>."
    assert result.task_outputs[0].tool_calls[0].name == "ask_editor"


def test_an_empty_question_fails_without_asking() -> None:
    model = ScriptedChatModel([tool_call("ask_human", {"input": "  "}), "done"])
    reviewer = ScriptedReviewHandler([])
    agent = Agent(role="Analyst", goal="Report", tools=[HumanInputTool()], llm=model)
    Ensemble(tasks=[Task(description=TASK, agent=agent)], review_handler=reviewer).run()
    assert model.requests[1].tool_results == [
        "Error: 'ask_human' needs a question: pass it as input"
    ]
    assert reviewer.requests == []


def test_a_negative_timeout_is_refused() -> None:
    with pytest.raises(ValueError, match="timeout"):
        HumanInputTool(timeout=-1)


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("e Use the 2023 figures\n", "Use the 2023 figures"),
        ("e\nUse the 2023 figures\n", "Use the 2023 figures"),
        ("\n", NO_ANSWER),
        ("x busy\n", "Error: The human declined to answer: busy"),
        ("", "Error: The human did not answer: Review got no answer: end of input"),
    ],
    ids=["e-inline", "e-next-line", "enter", "x", "eof"],
)
def test_on_the_console_the_human_answers_with_e(typed: str, expected: str) -> None:
    out = io.StringIO()
    handler = ConsoleReviewHandler(io.StringIO(typed), out, countdown=False)
    _, model = run_asking(HumanInputTool(timeout=10), handler)
    assert answer_seen(model) == expected
    banner = out.getvalue()
    assert QUESTION in banner and "Tool:    ask_human" in banner
    assert "type e and your answer" in banner
