"""The context policy on the head of a conversation: when the system prompt, session history and
the task's prompt (holding earlier tasks' outputs) are over the window by themselves, the oldest
history exchanges go first, then earlier outputs are summarised or cut from their end, oldest
first, and only a task whose own description does not fit fails."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agentensemble import LLM, Agent, Ensemble, Task, tool
from agentensemble.context_policy import (
    CUT_MARKER,
    ContextPolicy,
    cut_outputs,
    cut_text,
    drop_oldest_exchanges,
    exchanges,
)
from agentensemble.errors import TaskExecutionError
from agentensemble.events import ContextCompacted, LLMCallCompleted
from agentensemble.execution._window import TokenCounter
from agentensemble.memory import SQLiteMemory
from agentensemble.testing import (
    Fault,
    FunctionChatModel,
    OpenAICompatibleServer,
    ScriptedChatModel,
    TextReply,
    tool_call,
)

Message = dict[str, Any]


def said(role: str, text: str) -> Message:
    return {"role": role, "content": text}


def tens(messages: Sequence[Message]) -> int:
    """A stand-in token counter: one token per 10 characters of content, at least one each."""
    return sum(max(1, len(str(m.get("content") or "")) // 10) for m in messages)


def chars(text: str) -> int:
    """A stand-in text counter: one token per character."""
    return len(text)


SYSTEM = said("system", "s" * 100)  # 10 tokens
HISTORY = [
    said("user", "q1 " * 100),  # each exchange 30 + 30 tokens
    said("assistant", "a1 " * 100),
    said("user", "q2 " * 100),
    said("assistant", "a2 " * 100),
    said("user", "q3 " * 100),
    said("assistant", "a3 " * 100),
]
PROMPT = said("user", "task " * 20)  # 10 tokens
TURN = said("assistant", "t" * 100)  # 10 tokens


def contents(messages: Sequence[Message]) -> list[str]:
    return [str(m["content"])[:2] for m in messages]


def test_history_is_cut_into_exchanges_a_user_message_with_its_replies() -> None:
    stray = said("assistant", "before any question")
    cut = exchanges([stray, *HISTORY[:3], said("assistant", "more")])
    assert [contents(part) for part in cut] == [["be"], ["q1", "a1"], ["q2", "mo"]]


@pytest.mark.parametrize(
    ("limit", "left"),
    [
        (1000, ["q1", "a1", "q2", "a2", "q3", "a3"]),  # fits: nothing goes
        (210, ["q1", "a1", "q2", "a2", "q3", "a3"]),  # 10 + 180 + 10 + 10 exactly
        (209, ["q2", "a2", "q3", "a3"]),  # whole exchanges, the oldest first
        (90, ["q3", "a3"]),
        (89, []),
        (1, []),  # no history left; the system prompt, prompt and turn always stay
    ],
)
def test_the_oldest_history_exchanges_go_whole_and_never_the_tasks_prompt(
    limit: int, left: list[str]
) -> None:
    messages = [SYSTEM, *HISTORY, PROMPT, TURN]
    shorter = drop_oldest_exchanges(messages, 1, 1 + len(HISTORY), limit, tens)
    assert contents(shorter) == ["ss", *left, "ta", "tt"]
    assert len(messages) == 9  # the input is never changed


@pytest.mark.parametrize(
    ("text", "keep", "expected"),
    [
        ("short", 10, "short"),  # nothing to cut
        ("short", 5, "short"),
        ("one two three four", 9, "one two\n" + CUT_MARKER.format(cut=11, size=18)),  # at a word
        ("one\ntwo three", 5, "one\n" + CUT_MARKER.format(cut=10, size=13)),  # back to a line
        ("abcdefghij", 4, "abcd\n" + CUT_MARKER.format(cut=6, size=10)),  # no break near
        ("abcdefghij", 0, CUT_MARKER.format(cut=10, size=10)),  # the marker alone
    ],
)
def test_an_output_is_cut_from_its_end_with_a_one_line_marker(
    text: str, keep: int, expected: str
) -> None:
    assert cut_text(text, keep) == expected


def test_the_cut_marker_says_how_much_was_cut_on_one_line() -> None:
    marker = cut_text("x" * 20_000, 1000).splitlines()[-1]
    assert marker == ("[19,000 of 20,000 characters of this output cut to fit the context window]")


OUTPUTS = ["A" * 1000, "B" * 1000, "C" * 1000]
MARKER = len(CUT_MARKER.format(cut=1000, size=1000))  # the marker's tokens by ``chars``


@pytest.mark.parametrize(
    ("budget", "whole", "cut"),
    [
        (3000, "ABC", ""),  # fits
        (2500, "BC", "A"),  # the oldest cut first, the newest whole
        (2000 + MARKER, "BC", "A"),  # A down to its marker
        (1500, "C", "AB"),  # then the next oldest
        (0, "", "ABC"),  # no room: every output is its marker
    ],
)
def test_earlier_outputs_are_cut_oldest_first_until_they_fit(
    budget: int, whole: str, cut: str
) -> None:
    shorter = cut_outputs(OUTPUTS, budget, chars)
    for letter, original, now in zip("ABC", OUTPUTS, shorter, strict=True):
        if letter in whole:
            assert now is original
        else:
            assert letter in cut and now.endswith("cut to fit the context window]")
            kept = now.rpartition("\n")[0]  # what is left before the marker line
            assert original.startswith(kept)  # the start stays
    if budget >= len(cut) * MARKER:
        assert sum(map(chars, shorter)) <= budget


def test_an_output_shorter_than_its_marker_is_never_cut() -> None:
    tiny, cut = cut_outputs(["tiny", "B" * 1000], 500, chars)
    assert tiny == "tiny"  # its marker would be longer than it: the next output is cut instead
    assert cut.startswith("BBB") and cut.endswith("context window]") and chars(cut) <= 496


# -- in a run -----------------------------------------------------------------------------------

REPORT = "".join(f"Finding {n}: the rate was {n}%.\n" for n in range(3000))  # ~90,000 chars


class Listen:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def on_event(self, event: Any) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]


@tool
def look_up(name: str) -> str:
    """Look a name up."""
    return f"{name}: found"


async def prompt_tokens(model: ScriptedChatModel | FunctionChatModel) -> list[int]:
    counter = TokenCounter(model, model.requests[0].tools)
    await counter.start()
    return [counter(request.messages) + counter.tools_tokens for request in model.requests]


def chain(
    policy: ContextPolicy, listen: Listen
) -> tuple[Any, ScriptedChatModel, ScriptedChatModel]:
    """A researcher whose report is far larger than the writer's window, a short note from a
    checker, and a writer (with a tool turn) reading both."""
    research = ScriptedChatModel([REPORT])
    check = ScriptedChatModel(["Checked: every finding holds."])
    write = ScriptedChatModel([tool_call("look_up", {"name": "rate"}), "Rates rise."])
    researcher = Agent(role="Researcher", goal="Find", llm=research)
    checker = Agent(role="Checker", goal="Check", llm=check)
    writer = Agent(role="Writer", goal="Write", llm=write, tools=[look_up], context_policy=policy)
    research_task = Task(description="Research the rates", agent=researcher)
    check_task = Task(description="Check the findings", agent=checker)
    write_task = Task(
        description="Write the summary", agent=writer, context=[research_task, check_task]
    )
    output = Ensemble(tasks=[research_task, check_task, write_task], listeners=[listen]).run()
    return output, research, write


@pytest.mark.anyio
async def test_an_earlier_output_far_over_the_window_is_cut_and_the_next_task_runs() -> None:
    listen = Listen()
    output, _, write = chain(ContextPolicy(max_prompt_tokens=800), listen)
    assert output.raw == "Rates rise."
    assert max(await prompt_tokens(write)) <= 800  # the report alone is ~22,000 tokens
    prompt = write.requests[0].messages[1]["content"]
    report_section = "### Research the rates (Researcher)\nFinding 0: the rate was 0%.\n"
    assert prompt.startswith("## Context\n\n" + report_section)  # the start stays
    marker = re.search(r"\n\[([\d,]+) of ([\d,]+) characters of this output cut to fit", prompt)
    assert marker is not None
    cut, size = (int(n.replace(",", "")) for n in marker.groups())
    assert size == len(REPORT) and cut > size * 0.9
    assert "### Check the findings (Checker)\nChecked: every finding holds." in prompt  # whole
    assert prompt.endswith("## Task\nWrite the summary")  # the task's own prompt stays
    # the next turn sends the same prompt: no second cut while the conversation fits
    assert write.requests[1].messages[1]["content"] == prompt
    [compacted] = listen.of(ContextCompacted)
    assert compacted.context_outputs_cut == 1 and compacted.context_outputs_summarized == 0
    assert compacted.tokens_before > 20_000 >= 800 >= compacted.tokens_after
    assert output.task_outputs[0].raw == REPORT  # the output itself is kept whole


def test_summarize_with_summarises_the_earlier_output_in_a_counted_call() -> None:
    summariser = FunctionChatModel(
        lambda messages, tools: "3,000 findings; rates from 0% to 2999%."
    )
    summariser.model = "openai/gpt-4o-mini"
    listen = Listen()
    output, _, write = chain(
        ContextPolicy(max_prompt_tokens=800, summarize_with=summariser), listen
    )
    assert output.raw == "Rates rise."
    [asked] = summariser.requests
    assert asked.messages[1]["content"].startswith("Task: Research the rates (Researcher)\n\n")
    assert "Finding 2999: the rate was 2999%." in asked.messages[1]["content"]
    prompt = write.requests[0].messages[1]["content"]
    assert (
        "### Research the rates (Researcher)\n"
        f"[summary of this output ({len(REPORT):,} characters), made to fit the context window]\n"
        "3,000 findings; rates from 0% to 2999%."
    ) in prompt
    assert "Finding 0:" not in prompt and "characters of this output cut" not in prompt
    [compacted] = listen.of(ContextCompacted)
    assert compacted.context_outputs_summarized == 1 and compacted.context_outputs_cut == 0
    calls = [e for e in listen.of(LLMCallCompleted) if e.model == "openai/gpt-4o-mini"]
    assert len(calls) == 1 and calls[0].agent_role == "Writer"  # the writer's call, counted
    assert output.task_outputs[2].llm_calls == len(write.requests) + 1


def test_a_task_whose_own_prompt_does_not_fit_still_fails_before_sending() -> None:
    research = ScriptedChatModel([REPORT])
    write = ScriptedChatModel(["never sent"])
    writer = Agent(
        role="Writer", goal="Write", llm=write, context_policy=ContextPolicy(max_prompt_tokens=60)
    )
    research_task = Task(description="Research", agent=Agent(role="R", goal="Find", llm=research))
    tasks = [
        research_task,
        Task(
            description="Write " + "carefully " * 40,
            name="writing",
            agent=writer,
            context=[research_task],
        ),
    ]
    with pytest.raises(TaskExecutionError) as caught:
        Ensemble(tasks=tasks).run()
    message = str(caught.value.__cause__)
    assert "Task 'writing'" in message and "60-token window" in message
    assert "earlier tasks' outputs cut to their markers" in message
    assert write.requests == []


def test_the_oldest_session_exchanges_go_first_in_whole_pairs(tmp_path: Path) -> None:
    answers = [f"answer {n}: " + "detail " * 150 for n in range(4)]  # ~270 tokens each
    model = ScriptedChatModel([*answers, "final answer"])
    listen = Listen()
    agent = Agent(
        role="Support",
        goal="Help",
        llm=model,
        context_policy=ContextPolicy(max_prompt_tokens=700),
    )
    ensemble = Ensemble(
        tasks=[Task(description="Answer: {question}", agent=agent)],
        memory=SQLiteMemory(tmp_path / "memory.sqlite"),
        listeners=[listen],
    )
    for n in range(5):
        ensemble.run({"question": f"question {n}"}, session="long")
    last = model.requests[-1].messages
    shown = [(m["role"], m["content"][:10]) for m in last]
    assert shown[0][0] == "system"
    assert last[-1] == {"role": "user", "content": "## Task\nAnswer: question 4"}
    history = shown[1:-1]
    assert history and len(history) % 2 == 0  # whole user/assistant pairs
    assert history[-2:] == [("user", "Answer: qu"), ("assistant", "answer 3: ")]  # newest kept
    assert ("assistant", "answer 0: ") not in history  # the oldest went first
    counter = TokenCounter(model, None)  # the estimate: no tokenizer to load, no tools
    assert all(counter(request.messages) <= 700 for request in model.requests)
    dropped = [e for e in listen.of(ContextCompacted) if e.history_dropped]
    assert dropped and all(e.history_dropped % 2 == 0 for e in dropped)
    assert dropped[-1].tokens_after <= 700 < dropped[-1].tokens_before


def test_over_http_the_cut_is_counted_with_the_models_tokenizer() -> None:
    """The writer is an ``LLM`` on a local OpenAI-compatible server: its prompt is counted (and
    the report cut) with gpt-4o-mini's tokenizer, and what the server received fits."""
    import litellm

    research = Task(
        description="Research the rates",
        agent=Agent(role="Researcher", goal="Find", llm=ScriptedChatModel([REPORT])),
    )
    listen = Listen()
    with OpenAICompatibleServer() as server:
        server.push_text("Rates rise.")
        llm = LLM("openai/gpt-4o-mini", api_base=server.base_url, api_key="sk-test-head")
        writer = Agent(
            role="Writer",
            goal="Write",
            llm=llm,
            context_policy=ContextPolicy(max_prompt_tokens=800),
        )
        write = Task(description="Write the summary", agent=writer, context=[research])
        output = Ensemble(tasks=[research, write], listeners=[listen]).run()
        [request] = server.requests
    assert output.raw == "Rates rise."
    sent = request["messages"]
    assert litellm.token_counter(model="openai/gpt-4o-mini", messages=sent) <= 800
    prompt = sent[1]["content"]
    assert prompt.startswith("## Context\n\n### Research the rates (Researcher)\nFinding 0:")
    assert "characters of this output cut to fit the context window]" in prompt
    [compacted] = listen.of(ContextCompacted)
    assert compacted.context_outputs_cut == 1 and compacted.model == "openai/gpt-4o-mini"


def refusing_the_whole_report(body: dict[str, Any]) -> Any:
    """A provider whose window is smaller than litellm's table says: the whole report is over."""
    if any("Finding 2999:" in str(m.get("content")) for m in body["messages"]):
        error = {
            "error": {
                "message": "This model's maximum context length is 16000 tokens",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        }
        return Fault.http(400, body=json.dumps(error))
    return TextReply("Rates rise.")


def test_a_providers_refusal_cuts_the_earlier_output_once_and_asks_again() -> None:
    research = Task(
        description="Research the rates",
        agent=Agent(role="Researcher", goal="Find", llm=ScriptedChatModel([REPORT])),
    )
    listen = Listen()
    with OpenAICompatibleServer() as server:
        server.set_responder(refusing_the_whole_report)
        llm = LLM("openai/gpt-4o-mini", api_base=server.base_url, api_key="sk-test-head")
        writer = Agent(role="Writer", goal="Write", llm=llm, context_policy=ContextPolicy())
        write = Task(description="Write the summary", agent=writer, context=[research])
        output = Ensemble(tasks=[research, write], listeners=[listen]).run()
        outcomes = [request.outcome for request in server.log]
    assert output.raw == "Rates rise."
    assert outcomes.count("fault:status:400") == 1, outcomes  # one refusal, one retry
    [compacted] = listen.of(ContextCompacted)
    assert compacted.reason == "provider_error" and compacted.context_outputs_cut == 1
    assert compacted.tokens_after <= compacted.tokens_before * 0.75
