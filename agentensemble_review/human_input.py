"""``HumanInputTool``: the agent asks the human a question mid-task; the answer is the tool result.

The question goes to the run's review handler as a ``DURING_EXECUTION`` review whose ``output``
is the question. What the human answers becomes what the model sees:

============================  ==================================================================
decision                      tool result
============================  ==================================================================
``Edit(text)``                success: ``text``, the human's answer (on the console: ``e`` and
                              the answer; on the review page: Edit). A blank text counts as no
                              answer (next row).
``Continue()``                success: ``NO_ANSWER`` ("The human gave no answer; continue with
                              your best judgement."). Enter on the console does this.
``ExitEarly(reason)``         failure: ``The human declined to answer: <reason>``. The call fails,
                              the task goes on and the agent adapts; the run does not stop.
no decision in time           ``on_timeout``: CONTINUE gives the ``NO_ANSWER`` text; EXIT_EARLY
                              (the default) a failure ``The human did not answer: <why>``; FAIL
                              raises ``ReviewTimeoutError``, which stops the run.
============================  ==================================================================

The tool needs a review handler: an ensemble with this tool and no ``review_handler`` fails with
``ConfigurationError`` before the first model call (the tool reports ``requires_approval`` so the
resolver counts it), and the question itself is the only review asked: no separate approval of
the call comes first.
"""

from __future__ import annotations

from datetime import timedelta

from agentensemble.errors import ConfigurationError
from agentensemble.tools import (
    AbstractAgentTool,
    ToolResult,
    aask_reviewer,
    current_tool_context,
)
from agentensemble_review.errors import ReviewRequestRefusedError
from agentensemble_review.models import (
    DEFAULT_REVIEW_TIMEOUT,
    Continue,
    Edit,
    ExitEarly,
    OnTimeoutAction,
    ReviewRequest,
    ReviewTiming,
)

DEFAULT_NAME = "ask_human"
DEFAULT_DESCRIPTION = (
    "Ask the human supervising this task a question and wait for the answer. Use it when you "
    "need a fact, a preference or a decision that only a person can give. Pass the question, "
    "self-contained and specific, as input; the human's answer is the result."
)
DEFAULT_PROMPT = (
    "The agent asks you the question above. To answer, edit: on the console type e and your "
    "answer (e.g. `e Use the 2023 figures`); on a review page choose Edit and write the answer. "
    "Continue (Enter) gives no answer; exit (x) declines to answer."
)
NO_ANSWER = "The human gave no answer; continue with your best judgement."
DECLINED = "The human declined to answer"
NOT_ANSWERED = "The human did not answer"
NO_REASON = "no reason given"


class HumanInputTool(AbstractAgentTool):
    """A tool the agent calls to ask the human a question; the answer is the tool's result.

    ``HumanInputTool(name="ask_human", description=..., timeout=timedelta(minutes=5),
    on_timeout=OnTimeoutAction.EXIT_EARLY, prompt=...)``. ``timeout`` is a timedelta or seconds
    (zero waits forever); ``prompt`` is the instruction shown to the human with the question.
    See the module docstring for how each decision maps to the tool result.
    """

    requires_approval = True
    """Reported to the resolver so a missing review handler fails before the first model call;
    the question is the review, so ``needs_approval`` never adds an approval in front of it."""

    def __init__(
        self,
        name: str = DEFAULT_NAME,
        description: str = DEFAULT_DESCRIPTION,
        *,
        timeout: timedelta | float = DEFAULT_REVIEW_TIMEOUT,
        on_timeout: OnTimeoutAction | str = OnTimeoutAction.EXIT_EARLY,
        prompt: str = DEFAULT_PROMPT,
    ) -> None:
        self.name = name
        self.description = description
        # the reviewer's deadline, not ``AgentTool.timeout`` (a body's: the wait is the body)
        self.review_timeout = (
            timeout if isinstance(timeout, timedelta) else timedelta(seconds=timeout)
        )
        if self.review_timeout < timedelta(0):
            raise ValueError("timeout must be zero (wait forever) or positive")
        self.on_timeout = OnTimeoutAction(on_timeout)
        self.prompt = prompt

    def __repr__(self) -> str:
        return (
            f"HumanInputTool(name={self.name!r}, timeout={self.review_timeout!r}, "
            f"on_timeout={self.on_timeout.value!r})"
        )

    def needs_approval(self, input: str) -> bool:
        """Never: asking the question is the review (an approval first would ask twice)."""
        return False

    def question_request(self, question: str) -> ReviewRequest:
        """The review request that carries ``question`` to the handler."""
        return ReviewRequest(
            timing=ReviewTiming.DURING_EXECUTION,
            task_description=current_tool_context().task_description,
            output=question,
            prompt=self.prompt,
            tool_name=self.name,
            timeout=self.review_timeout,
            on_timeout=self.on_timeout,
        )

    async def ado_execute(self, input: str) -> ToolResult:
        question = input.strip()
        if not question:
            return ToolResult.failure(f"'{self.name}' needs a question: pass it as input")
        handler = current_tool_context().review_handler
        if handler is None:
            raise ConfigurationError(
                f"Tool '{self.name}' asks the human but no review handler is configured; "
                "pass review_handler= to the Ensemble (e.g. ConsoleReviewHandler())"
            )
        try:
            decision = await aask_reviewer(self.question_request(question))
        except ReviewRequestRefusedError as exc:  # the model's question was refused: its problem
            problem = (
                f"the question is too large ({len(question.encode('utf-8', 'surrogatepass'))} "
                "bytes)"
                if exc.status_code == 413
                else f"the service answered HTTP {exc.status_code} for the question"
            )
            return ToolResult.failure(f"the review service refused the question: {problem}")
        if isinstance(decision, Edit) and decision.revised_output.strip():
            return ToolResult.success(decision.revised_output)
        if isinstance(decision, (Edit, Continue)):
            return ToolResult.success(NO_ANSWER)
        assert isinstance(decision, ExitEarly)
        lead = NOT_ANSWERED if decision.timed_out else DECLINED
        return ToolResult.failure(f"{lead}: {decision.reason or NO_REASON}")


__all__ = ["NO_ANSWER", "HumanInputTool"]
