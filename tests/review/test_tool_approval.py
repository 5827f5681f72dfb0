"""Tool approval through whole ensembles: decorated and class tools, Continue / Edit / ExitEarly,
conditional approval, the immediate-return rule, a missing handler, and request_approval."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from datetime import timedelta

import pytest

from agentensemble import (
    AbstractAgentTool,
    Agent,
    ConfigurationError,
    Ensemble,
    EnsembleOutput,
    ExitReason,
    ReturnBehavior,
    Task,
    TaskExecutionError,
    tool,
)
from agentensemble.llm.types import ChatResponse, Message, ToolSpec
from agentensemble.testing import FunctionChatModel, ScriptedChatModel, tool_call, tool_calls
from agentensemble_review import (
    Continue,
    Edit,
    ExitEarly,
    InvalidReviewDecisionError,
    OnTimeoutAction,
    Review,
    ReviewDecision,
    ReviewRequest,
    ReviewTiming,
    ScriptedReviewHandler,
)

TASK = "Settle the invoices"
LEDGER: list[tuple[str, int]] = []
DELETED: list[str] = []


@pytest.fixture(autouse=True)
def _clean() -> None:
    LEDGER.clear()
    DELETED.clear()


@tool(requires_approval=True)
def transfer(to: str, amount: int) -> str:
    """Send money.

    Args:
        to: who receives it
        amount: how much, in euros
    """
    LEDGER.append((to, amount))
    return f"sent {amount} to {to}"


class DeleteFile(AbstractAgentTool):
    name = "delete_file"
    description = "Delete the file at the given path"
    requires_approval = True

    def do_execute(self, input: str) -> str:
        DELETED.append(input)
        return f"deleted {input}"


def run(
    model: ScriptedChatModel | FunctionChatModel,
    tools: Sequence[object],
    reviewer: object | None,
) -> EnsembleOutput:
    agent = Agent(role="Clerk", goal="Pay what is due", tools=list(tools), llm=model)
    return Ensemble(tasks=[Task(description=TASK, agent=agent)], review_handler=reviewer).run()


def seen(model: ScriptedChatModel, turn: int = 1) -> list[str]:
    """The tool results the model was sent at ``turn`` (0 is the first request)."""
    return model.requests[turn].tool_results


ARGS = {"to": "ann", "amount": 500}
ARGS_TEXT = json.dumps(ARGS)


# -- decorated functions ----------------------------------------------------------------------


def test_continue_runs_the_decorated_tool_and_the_request_describes_the_call() -> None:
    model = ScriptedChatModel([tool_call("transfer", ARGS), "paid"])
    reviewer = ScriptedReviewHandler([Continue()])
    result = run(model, [transfer], reviewer)
    assert LEDGER == [("ann", 500)]
    assert seen(model) == ["sent 500 to ann"]
    assert result.raw == "paid"
    (request,) = reviewer.requests
    assert request.timing is ReviewTiming.DURING_EXECUTION
    assert request.tool_name == "transfer"
    assert json.loads(request.output) == ARGS  # the tool input: the JSON arguments
    assert request.task_description == TASK
    assert request.prompt is not None and "transfer" in request.prompt


def test_an_edit_runs_the_decorated_tool_on_the_revised_arguments() -> None:
    model = ScriptedChatModel([tool_call("transfer", ARGS), "paid"])
    reviewer = ScriptedReviewHandler([Edit('{"to": "ann", "amount": 50}')])
    result = run(model, [transfer], reviewer)
    assert LEDGER == [("ann", 50)]
    assert seen(model) == ["sent 50 to ann"]
    assert result.task_outputs[0].tool_calls[0].output == "sent 50 to ann"


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        ('{"to": "ann", "amount": "fifty"}', "amount: Input should be a valid integer"),
        ('{"to": "ann"}', "amount: Field required"),
        ("fifty euros to ann", "not valid JSON"),
    ],
    ids=["bad-type", "missing-field", "not-json"],
)
def test_an_invalid_edit_is_a_clear_failure_the_model_sees(edit: str, problem: str) -> None:
    model = ScriptedChatModel([tool_call("transfer", ARGS), "could not pay"])
    run(model, [transfer], ScriptedReviewHandler([Edit(edit)]))
    assert LEDGER == []
    (message,) = seen(model)
    assert message.startswith(
        "Error: The reviewer's edited input is invalid, so the tool did not run: "
        "Invalid arguments for 'transfer': "
    )
    assert problem in message


def test_a_rejection_is_an_error_the_model_sees_and_the_task_goes_on() -> None:
    model = ScriptedChatModel([tool_call("transfer", ARGS), "I did not pay: rejected."])
    result = run(model, [transfer], ScriptedReviewHandler([ExitEarly("Too much at once")]))
    assert LEDGER == []
    assert seen(model) == ["Error: Rejected by reviewer: Too much at once"]
    record = result.task_outputs[0].tool_calls[0]
    assert not record.is_success
    assert record.output == "Error: Rejected by reviewer: Too much at once"
    assert result.exit_reason is ExitReason.COMPLETED  # a rejected call never stops the run


def adaptive_clerk(messages: list[Message], tools: list[ToolSpec] | None) -> ChatResponse | str:
    """A model that reacts to what it is told: asks for 500, then 50 if rejected."""
    last = messages[-1]
    if last.get("role") != "tool":
        return tool_call("transfer", ARGS)
    content = str(last.get("content"))
    if content.startswith("Error: Rejected by reviewer"):
        return tool_call("transfer", {"to": "ann", "amount": 50})
    return f"Done: {content}"


def test_after_a_rejection_the_agent_adapts_and_its_next_call_is_approved() -> None:
    model = FunctionChatModel(adaptive_clerk)
    reviewer = ScriptedReviewHandler([ExitEarly("Split it up"), Continue()])
    result = run(model, [transfer], reviewer)
    assert LEDGER == [("ann", 50)]
    assert result.raw == "Done: sent 50 to ann"
    assert [json.loads(r.output)["amount"] for r in reviewer.requests] == [500, 50]
    assert [c.is_success for c in result.task_outputs[0].tool_calls] == [False, True]


def test_a_rejection_without_a_reason_says_so() -> None:
    model = ScriptedChatModel([tool_call("transfer", ARGS), "ok"])
    run(model, [transfer], ScriptedReviewHandler([ExitEarly()]))
    assert seen(model) == ["Error: Rejected by reviewer: no reason given"]


# -- AbstractAgentTool subclasses -------------------------------------------------------------


def test_continue_runs_the_class_tool_on_its_input() -> None:
    model = ScriptedChatModel([tool_call("delete_file", {"input": "/tmp/old.log"}), "gone"])
    reviewer = ScriptedReviewHandler([Continue()])
    run(model, [DeleteFile()], reviewer)
    assert DELETED == ["/tmp/old.log"]
    (request,) = reviewer.requests
    assert (request.timing, request.tool_name, request.output) == (
        ReviewTiming.DURING_EXECUTION,
        "delete_file",
        "/tmp/old.log",
    )


def test_an_edit_replaces_the_class_tool_input() -> None:
    model = ScriptedChatModel([tool_call("delete_file", {"input": "/etc/passwd"}), "done"])
    run(model, [DeleteFile()], ScriptedReviewHandler([Edit("/tmp/passwd.copy")]))
    assert DELETED == ["/tmp/passwd.copy"]
    assert seen(model) == ["deleted /tmp/passwd.copy"]


def test_a_rejected_class_tool_never_runs() -> None:
    model = ScriptedChatModel([tool_call("delete_file", {"input": "/etc/passwd"}), "kept it"])
    result = run(model, [DeleteFile()], ScriptedReviewHandler([ExitEarly("system file")]))
    assert DELETED == []
    assert seen(model) == ["Error: Rejected by reviewer: system file"]
    assert result.raw == "kept it"


# -- the immediate-return rule ----------------------------------------------------------------


@tool(requires_approval=True, return_behavior=ReturnBehavior.IMMEDIATE)
def publish(title: str) -> str:
    """Publish the article; its confirmation is the task's answer."""
    return f"Published '{title}'"


def test_an_approved_immediate_tool_ends_the_task_with_its_output() -> None:
    model = ScriptedChatModel([tool_call("publish", {"title": "Q3"})])
    result = run(model, [publish], ScriptedReviewHandler([Continue()]))
    assert result.raw == "Published 'Q3'"
    assert result.task_outputs[0].returned_immediately
    assert len(model.requests) == 1


def test_a_rejected_immediate_tool_never_counts_as_an_immediate_return() -> None:
    model = ScriptedChatModel([tool_call("publish", {"title": "Q3"}), "Not published."])
    result = run(model, [publish], ScriptedReviewHandler([ExitEarly("embargoed")]))
    output = result.task_outputs[0]
    assert not output.returned_immediately
    assert result.raw == "Not published."
    assert seen(model) == ["Error: Rejected by reviewer: embargoed"]
    model.assert_all_consumed()


def test_a_rejected_call_among_immediate_calls_of_one_turn_keeps_the_task_going() -> None:
    model = ScriptedChatModel(
        [tool_calls(("publish", {"title": "A"}), ("publish", {"title": "B"})), "Only A."]
    )
    reviewer = ByInput(reject_if="B")
    result = run(model, [publish], reviewer)
    assert not result.task_outputs[0].returned_immediately
    assert sorted(seen(model)) == ["Error: Rejected by reviewer: B is not ready", "Published 'A'"]
    assert result.raw == "Only A."


# -- conditional approval ---------------------------------------------------------------------


class ByInput:
    """A reviewer that rejects tool inputs containing ``reject_if`` (order-independent, so
    concurrent calls of one turn get a deterministic answer)."""

    def __init__(self, reject_if: str) -> None:
        self.reject_if = reject_if
        self.requests: list[ReviewRequest] = []
        self._lock = threading.Lock()

    def review(self, request: ReviewRequest) -> ReviewDecision:
        with self._lock:
            self.requests.append(request)
        if self.reject_if in request.output:
            return ExitEarly(f"{self.reject_if} is not ready")
        return Continue()


def big_amount(arguments: str) -> bool:
    amount: int = json.loads(arguments).get("amount", 0)
    return amount > 100


@tool(requires_approval=big_amount)
def pay(to: str, amount: int) -> str:
    """Pay someone; large amounts need a human's approval."""
    LEDGER.append((to, amount))
    return f"paid {amount} to {to}"


class Shell(AbstractAgentTool):
    name = "shell"
    description = "Run a shell command (simulated)"

    def requires_approval(self, command: str) -> bool:
        return command.startswith(("rm ", "sudo "))

    def do_execute(self, input: str) -> str:
        DELETED.append(input)
        return f"ran {input}"


def test_a_callable_rule_asks_only_for_dangerous_input() -> None:
    model = ScriptedChatModel(
        [
            tool_calls(
                ("pay", {"to": "bob", "amount": 20}),
                ("pay", {"to": "eve", "amount": 9000}),
                ("shell", {"input": "ls /tmp"}),
                ("shell", {"input": "rm -rf /tmp/x"}),
            ),
            "done",
        ]
    )
    reviewer = ByInput(reject_if="eve")
    run(model, [pay, Shell()], reviewer)
    assert sorted((r.tool_name or "", r.output) for r in reviewer.requests) == [
        ("pay", '{"to": "eve", "amount": 9000}'),
        ("shell", "rm -rf /tmp/x"),
    ]
    assert LEDGER == [("bob", 20)]
    assert sorted(DELETED) == ["ls /tmp", "rm -rf /tmp/x"]
    assert "Error: Rejected by reviewer: eve is not ready" in seen(model)


# -- no handler -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tools_on", "gated", "name"),
    [
        ("agent", transfer, "transfer"),
        ("agent", DeleteFile(), "delete_file"),
        ("agent", pay, "pay"),  # a callable rule needs a handler even if it might not ask
        ("task", Shell(), "shell"),
    ],
    ids=["decorated", "class", "callable-rule", "on-the-task"],
)
def test_no_handler_is_a_configuration_error_before_any_model_call(
    tools_on: str, gated: object, name: str
) -> None:
    model = ScriptedChatModel([tool_call(name, {}), "never"])
    agent = Agent(role="Clerk", goal="Pay", tools=[gated] if tools_on == "agent" else [], llm=model)
    task = Task(description=TASK, agent=agent, tools=[gated] if tools_on == "task" else [])
    with pytest.raises(ConfigurationError, match=f"{name} require approval"):
        Ensemble(tasks=[task])
    assert model.requests == []


def test_a_handler_removed_after_construction_still_fails_before_any_model_call() -> None:
    model = ScriptedChatModel([tool_call("transfer", ARGS), "never"])
    agent = Agent(role="Clerk", goal="Pay", tools=[transfer], llm=model)
    ensemble = Ensemble(
        tasks=[Task(description=TASK, agent=agent)], review_handler=ScriptedReviewHandler([])
    )
    ensemble.review_handler = None
    with pytest.raises(ConfigurationError, match="require approval"):
        ensemble.run()
    assert model.requests == []
    assert LEDGER == []


# -- request_approval from inside a tool ------------------------------------------------------


class Mailer(AbstractAgentTool):
    """Asks for itself, mid-execution, with its own timeout and on_timeout."""

    name = "send_mail"
    description = "Email the whole customer list"

    def __init__(self) -> None:
        self.sent: list[str] = []

    def do_execute(self, input: str) -> str:
        decision = self.request_approval(
            f"About to email 300 customers: {input}",
            timeout=timedelta(seconds=30),
            on_timeout=OnTimeoutAction.CONTINUE,
        )
        if isinstance(decision, ExitEarly):
            return f"not sent ({decision.reason})"
        text = decision.revised_output if isinstance(decision, Edit) else input
        self.sent.append(text)
        return f"sent: {text}"


class AsyncMailer(Mailer):
    name = "send_mail_async"

    async def ado_execute(self, input: str) -> str:
        decision = await self.arequest_approval(f"About to email 300 customers: {input}")
        return "sent" if isinstance(decision, Continue) else f"held: {decision!r}"


@pytest.mark.parametrize(
    ("decision", "result", "sent"),
    [
        (Continue(), "sent: Sale!", ["Sale!"]),
        (Edit("Sale ends Friday!"), "sent: Sale ends Friday!", ["Sale ends Friday!"]),
        (ExitEarly("wrong list"), "not sent (wrong list)", []),
    ],
    ids=["continue", "edit", "exit"],
)
def test_request_approval_in_a_tool_body_asks_the_handler(
    decision: ReviewDecision, result: str, sent: list[str]
) -> None:
    mailer = Mailer()
    model = ScriptedChatModel([tool_call("send_mail", {"input": "Sale!"}), "ok"])
    reviewer = ScriptedReviewHandler([decision])
    run(model, [mailer], reviewer)
    assert seen(model) == [result]
    assert mailer.sent == sent
    (request,) = reviewer.requests
    assert request.timing is ReviewTiming.DURING_EXECUTION
    assert request.tool_name == "send_mail"
    assert request.output == "About to email 300 customers: Sale!"
    assert request.task_description == TASK
    assert request.timeout == timedelta(seconds=30)
    assert request.on_timeout is OnTimeoutAction.CONTINUE


def test_request_approval_auto_approves_without_a_handler() -> None:
    mailer, amailer = Mailer(), AsyncMailer()
    model = ScriptedChatModel(
        [
            tool_calls(("send_mail", {"input": "Sale!"}), ("send_mail_async", {"input": "Hi"})),
            "ok",
        ]
    )
    result = run(model, [mailer, amailer], None)
    assert seen(model) == ["sent: Sale!", "sent"]
    assert mailer.sent == ["Sale!"]
    assert result.exit_reason is ExitReason.COMPLETED


class AsyncOnlyReviewer:
    """A handler with only ``areview``: a sync tool body's request runs it on the run's loop."""

    def __init__(self, decision: ReviewDecision) -> None:
        self.decision = decision
        self.requests: list[ReviewRequest] = []
        self.threads: list[str] = []

    async def areview(self, request: ReviewRequest) -> ReviewDecision:
        self.requests.append(request)
        self.threads.append(threading.current_thread().name)
        return self.decision


def test_an_async_handler_answers_a_sync_body_and_an_async_body() -> None:
    reviewer = AsyncOnlyReviewer(ExitEarly("not today"))
    model = ScriptedChatModel(
        [
            tool_calls(("send_mail", {"input": "Sale!"}), ("send_mail_async", {"input": "Hi"})),
            "ok",
        ]
    )
    run(model, [Mailer(), AsyncMailer()], reviewer)
    assert seen(model) == [
        "not sent (not today)",
        "held: ExitEarly(reason='not today', timed_out=False)",
    ]
    assert sorted(r.tool_name or "" for r in reviewer.requests) == ["send_mail", "send_mail_async"]
    # both ran on the run's own event loop thread, not on a private loop in the worker thread
    assert len(set(reviewer.threads)) == 1


def test_approval_and_after_task_review_in_one_run() -> None:
    """The gate and the after-task review both go to the same handler, in order."""
    model = ScriptedChatModel([tool_call("transfer", ARGS), "paid 500"])
    agent = Agent(role="Clerk", goal="Pay", tools=[transfer], llm=model)
    task = Task(description=TASK, agent=agent, review=Review.required("Report ok?"))
    reviewer = ScriptedReviewHandler([Continue(), Edit("paid 500 to ann")])
    result = Ensemble(tasks=[task], review_handler=reviewer).run()
    assert [r.timing for r in reviewer.requests] == [
        ReviewTiming.DURING_EXECUTION,
        ReviewTiming.AFTER_EXECUTION,
    ]
    assert result.raw == "paid 500 to ann"


# -- a reviewer that fails never approves -----------------------------------------------------


class CrashingReviewer:
    def review(self, request: ReviewRequest) -> ReviewDecision:
        raise RuntimeError("review service down")


class GarbageReviewer:
    def review(self, request: ReviewRequest) -> ReviewDecision:
        return "yes"  # type: ignore[return-value]


def test_a_reviewer_that_raises_fails_the_call_without_running_it() -> None:
    model = ScriptedChatModel([tool_call("transfer", ARGS), "could not pay"])
    result = run(model, [transfer], CrashingReviewer())
    assert LEDGER == []
    assert seen(model) == ["Error: RuntimeError: review service down"]
    assert result.raw == "could not pay"


def test_a_reviewer_answering_garbage_stops_the_run_and_approves_nothing() -> None:
    model = ScriptedChatModel([tool_call("transfer", ARGS), "never"])
    with pytest.raises(TaskExecutionError) as info:
        run(model, [transfer], GarbageReviewer())
    assert isinstance(info.value.__cause__, InvalidReviewDecisionError)
    assert LEDGER == []
    assert len(model.requests) == 1
