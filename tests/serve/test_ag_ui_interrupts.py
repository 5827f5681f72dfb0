"""Human review over AG-UI: a gated tool call or a task review ends the stream with an
interrupt; a resume on the same thread answers it (approve, edit, reject) and the same run goes
on. Fail closed: an answer that cannot be applied is refused and decides nothing; a review
nobody answers ends by its timeout; a new run on the thread abandons the waiting one."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from ag_ui_helpers import mail_crew, post, resume, run_input, served, user

from agentensemble import Agent, Ensemble, Task
from agentensemble.events import ReviewDecided
from agentensemble.serve import AGUIReviewHandler
from agentensemble.testing import FunctionChatModel, ScriptedChatModel, tool_call
from agentensemble_review import Review

START = run_input(messages=[user("the picnic")])


def tool_results(model: ScriptedChatModel) -> list[str]:
    return [result for request in model.requests for result in request.tool_results]


def test_a_gated_tool_call_is_an_interrupt_the_run_waits_on() -> None:
    with served(mail_crew) as url:
        first = post(url, START)
    assert first.types[-1] == "RUN_FINISHED"
    [interrupt] = first.interrupts
    assert interrupt.reason == "tool_approval"
    assert interrupt.tool_call_id == first.of("TOOL_CALL_START")[0].tool_call_id
    assert "ann@example.com" in interrupt.message
    assert interrupt.response_schema["required"] == ["approved"]
    assert interrupt.metadata["argumentsSchema"]["required"] == ["to", "body"]
    assert interrupt.expires_at is not None and interrupt.expires_at.endswith("Z")
    # every step and message closed before RUN_FINISHED (the AG-UI client insists)
    assert len(first.of("STEP_STARTED")) == len(first.of("STEP_FINISHED"))
    assert first.state["status"] == "waiting for review"
    assert first.state["reviews"] == [
        {
            "id": interrupt.id,
            "timing": "during_execution",
            "toolName": "send_mail",
            "status": "pending",
        }
    ]


DECISIONS = [
    # (what, payload, the tool's result the model saw, the review's status)
    ("approve", {"approved": True}, "sent to ann@example.com: hello", "approved"),
    (
        "edit",
        {"approved": True, "editedArgs": {"to": "bob@example.com", "body": "hi"}},
        "sent to bob@example.com: hi",
        "edited",
    ),
    (
        "reject",
        {"approved": False, "reason": "not today"},
        "Error: Rejected by reviewer: not today",
        "rejected",
    ),
]


@pytest.mark.parametrize(
    ("what", "payload", "seen", "status"), DECISIONS, ids=[d[0] for d in DECISIONS]
)
def test_the_answer_is_a_review_decision_and_the_run_goes_on(
    what: str, payload: dict[str, Any], seen: str, status: str
) -> None:
    model = ScriptedChatModel(
        [tool_call("send_mail", {"to": "ann@example.com", "body": "hello"}), "Mail handled."]
    )
    decided: list[ReviewDecided] = []

    class Decisions:
        def on_event(self, event: Any) -> None:
            if isinstance(event, ReviewDecided):
                decided.append(event)

    def crew() -> Ensemble:
        ensemble = mail_crew(model=model)
        ensemble.listeners.append(Decisions())
        return ensemble

    with served(crew) as url:
        [interrupt] = post(url, START).interrupts
        second = resume(url, interrupt, payload)
    assert second.types[0] == "RUN_STARTED" and second.events[0].run_id == "r2"
    assert second.types[-1] == "RUN_FINISHED" and second.last.result == "Mail handled."
    assert second.last.outcome is None
    assert tool_results(model) == [seen]
    if what != "reject":
        assert second.of("TOOL_CALL_RESULT")[0].content == seen
    review = second.state["reviews"][0]
    assert review["status"] == status
    assert review["decidedBy"] == "address:127.0.0.1"  # who decided: the caller
    assert [d.decision for d in decided] == [
        {"approve": "continue", "edit": "edit", "reject": "exit_early"}[what]
    ]


REFUSED = [
    # (what, resume entry's payload, the error)
    (
        "arguments that break the tool's schema",
        {"approved": True, "editedArgs": {"to": 5}},
        "editedArgs do not fit tool 'send_mail'",
    ),
    (
        "arguments that are not an object",
        {"approved": True, "editedArgs": "to=bob"},
        "editedArgs must be an object",
    ),
    ("approved that is not a boolean", {"approved": "yes"}, "a boolean 'approved'"),
    ("no payload", None, "a boolean 'approved'"),
    (
        "an edited output for a tool call",
        {"approved": True, "editedOutput": "x"},
        "takes editedArgs",
    ),
    (
        "edited arguments of megabytes",
        {"approved": True, "editedArgs": {"to": "ann@example.com", "body": "b" * 1_000_000}},
        "editedArgs are 1000037 characters as JSON; the limit is 100000",
    ),
]


@pytest.mark.parametrize(("what", "payload", "error"), REFUSED, ids=[r[0] for r in REFUSED])
def test_an_answer_that_cannot_be_applied_is_refused_and_decides_nothing(
    what: str, payload: Any, error: str
) -> None:
    model = ScriptedChatModel(
        [tool_call("send_mail", {"to": "ann@example.com", "body": "hello"}), "Mail handled."]
    )
    with served(lambda: mail_crew(model=model)) as url:
        [interrupt] = post(url, START).interrupts
        refused = resume(url, interrupt, payload)
        assert refused.status == 422 and error in refused.error
        assert tool_results(model) == []  # the tool did not run
        then = resume(url, interrupt, {"approved": True}, run="r3")  # still open: answerable
    assert then.last.result == "Mail handled."


def test_a_cancelled_interrupt_rejects_the_call() -> None:
    model = ScriptedChatModel(
        [tool_call("send_mail", {"to": "ann@example.com", "body": "hello"}), "Not sent."]
    )
    with served(lambda: mail_crew(model=model)) as url:
        [interrupt] = post(url, START).interrupts
        entry = {"interruptId": interrupt.id, "status": "cancelled"}
        second = post(url, run_input(run="r2", resume=[entry]))
    assert second.last.result == "Not sent."
    assert tool_results(model) == [
        "Error: Rejected by reviewer: cancelled by the AG-UI user (address:127.0.0.1)"
    ]


def review_crew(model: ScriptedChatModel, timeout: float = 300) -> Ensemble:
    agent = Agent(role="Writer", goal="Write", llm=model)
    task = Task(
        description="Draft {topic}",
        expected_output="A line",
        agent=agent,
        review=Review.required(prompt="Publish this?", timeout=timeout),
    )
    return Ensemble(tasks=[task], review_handler=AGUIReviewHandler())


def test_a_task_review_is_an_interrupt_and_an_edit_replaces_the_output() -> None:
    with served(lambda: review_crew(ScriptedChatModel(["A draft."]))) as url:
        first = post(url, START)
        [interrupt] = first.interrupts
        assert interrupt.reason == "task_review" and interrupt.tool_call_id is None
        assert interrupt.message.startswith("Publish this?") and "A draft." in interrupt.message
        second = resume(url, interrupt, {"approved": True, "editedOutput": "A better draft."})
    assert first.text == "A draft."  # streamed as the model wrote it, before the review
    assert second.last.result == "A better draft."
    assert second.state["tasks"][0]["output"] == "A better draft."
    assert second.text == ""  # not streamed a second time after the resume


def test_a_rejected_task_review_stops_the_run_and_returns_nothing() -> None:
    with served(lambda: review_crew(ScriptedChatModel(["A draft."]))) as url:
        [interrupt] = post(url, START).interrupts
        second = resume(url, interrupt, {"approved": False, "reason": "off topic"})
    assert second.types[-1] == "RUN_ERROR" and second.last.code == "run_stopped"
    assert "RUN_FINISHED" not in second.types  # no result leaves a stopped run
    assert "A draft." not in second.last.message
    assert second.state["status"] == "stopped"


def test_a_review_nobody_answers_ends_by_its_timeout_and_a_late_answer_is_gone() -> None:
    with served(lambda: review_crew(ScriptedChatModel(["A draft."]), timeout=0.5)) as url:
        [interrupt] = post(url, START).interrupts
        deadline = time.monotonic() + 30
        late = resume(url, interrupt, None)  # unreadable: refused (422) while the review is open
        while late.status == 422 and time.monotonic() < deadline:
            time.sleep(0.05)
            late = resume(url, interrupt, None)
    # the timeout stopped the run (on_timeout: exit early): the interrupt is closed or gone
    assert late.status in (409, 410), late
    assert "timed out" in late.error or "no run of thread" in late.error


def test_a_review_that_times_out_with_no_stream_ends_its_run_even_when_told_to_go_on() -> None:
    # on_timeout "continue": the run would go on for nobody (no stream can read it again),
    # holding its thread (409) and a run place of its caller for as long as it ran
    went_on = threading.Event()

    async def model(messages: Any, tools: Any) -> str:
        if "Polish" in str(messages):  # the second task: only reached if the run went on
            went_on.set()
            await asyncio.Event().wait()  # until cancelled
        return "A draft."

    agent = Agent(role="Writer", goal="Write", llm=FunctionChatModel(model))
    gated = Review.required(timeout=0.3, on_timeout="continue")
    first = Task(description="Draft {topic}", expected_output="A line", agent=agent, review=gated)
    then = Task(description="Polish it", expected_output="A line", agent=agent, context=[first])
    crew = Ensemble(tasks=[first, then], review_handler=AGUIReviewHandler())
    with served(crew) as url:
        [interrupt] = post(url, START).interrupts
        deadline = time.monotonic() + 10
        late = resume(url, interrupt, None)  # unreadable: refused (422) while the review is open
        while late.status in (422, 410) and time.monotonic() < deadline:  # 410: closed, held
            time.sleep(0.05)
            late = resume(url, interrupt, None)
        again = post(url, run_input(run="r2", messages=[user("again")]))
    assert late.status == 409 and "no run of thread" in late.error  # the run is gone
    assert again.status == 200, again.error  # the thread took a new run
    assert again.last.outcome.type == "interrupt"  # (which reached its own review)
    assert not went_on.is_set()


def test_a_new_run_on_the_thread_abandons_the_waiting_one() -> None:
    model = ScriptedChatModel(
        [tool_call("send_mail", {"to": "ann@example.com", "body": "hello"}), "Second run."]
    )
    with served(lambda: mail_crew(model=model)) as url:
        [interrupt] = post(url, START).interrupts
        again = post(url, run_input(run="r2", messages=[user("the picnic")]))
        assert again.status == 200  # a fresh run (here: the model's next reply)
        late = resume(url, interrupt, {"approved": True}, run="r3")
    assert late.status == 409
    assert tool_results(model) == []  # the abandoned call never ran


def test_a_resume_finds_only_the_callers_own_run() -> None:
    tokens = {"ann": "ann-token-long-enough-1", "bob": "bob-token-long-enough-2"}
    with served(mail_crew, token=tokens) as url:
        first = post(url, START, headers={"Authorization": f"Bearer {tokens['ann']}"})
        [interrupt] = first.interrupts
        bob = resume(
            url, interrupt, {"approved": True}, headers={"Authorization": f"Bearer {tokens['bob']}"}
        )
        assert bob.status == 409 and "no run of thread" in bob.error
        ann = resume(
            url, interrupt, {"approved": True}, headers={"Authorization": f"Bearer {tokens['ann']}"}
        )
    assert ann.last.result == "Mail handled."
    assert ann.state["reviews"][0]["decidedBy"] == "ann"


def test_an_unknown_or_repeated_interrupt_is_refused() -> None:
    with served(mail_crew) as url:
        [interrupt] = post(url, START).interrupts
        entry = {"interruptId": interrupt.id, "status": "resolved", "payload": {"approved": True}}
        twice = post(url, run_input(run="r2", resume=[entry, entry]))
        unknown = post(url, run_input(run="r2", resume=[{**entry, "interruptId": "review-x"}]))
        answered = post(url, run_input(run="r2", resume=[entry]))
    assert twice.status == 422 and "twice" in twice.error
    assert unknown.status == 422 and "no open interrupt 'review-x'" in unknown.error
    assert answered.last.result == "Mail handled."


def test_two_gated_calls_are_two_interrupts_in_turn() -> None:
    model = ScriptedChatModel(
        [
            tool_call("send_mail", {"to": "ann@example.com", "body": "1"}),
            tool_call("send_mail", {"to": "bob@example.com", "body": "2"}),
            "Both handled.",
        ]
    )
    with served(lambda: mail_crew(model=model)) as url:
        answer = post(url, START)
        for number in range(2, 6):
            if answer.last.outcome is None:
                break
            entries = [
                {"interruptId": i.id, "status": "resolved", "payload": {"approved": True}}
                for i in answer.interrupts
            ]
            answer = post(url, run_input(run=f"r{number}", resume=entries))
    assert answer.last.result == "Both handled."
    assert tool_results(model) == ["sent to ann@example.com: 1", "sent to bob@example.com: 2"]
