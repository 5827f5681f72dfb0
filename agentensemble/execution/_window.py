"""A task's context policy at run time: the check around each model call that keeps the prompt
inside the model's window (``ContextPolicy``), and the one retry after a provider's
context-length error.

Before each call the prompt is counted (litellm's offline counter, with the model's tokenizer
where litellm bundles it, for an ``LLM``; about four characters a token for any other model),
each message once. Over the window, the policy's strategies run in order on the conversation,
in place (``context_policy``'s pure functions): old tool results become placeholders, then the
oldest turns are summarised by ``summarize_with`` (a model call counted like any other) or
dropped, a tool call always with its results, so no provider sees a lone tool message or the
reasoning parts of a turn that is gone. When the head (``Head``: system prompt, session history,
the task's prompt) is still over, the oldest session-history exchanges go, then earlier tasks'
outputs in the prompt's context section are summarised (``summarize_with``) or cut from their
end, oldest first. What still does not fit fails the task before anything is sent, naming the
task, the window and the prompt's size. Each step is a ``ContextCompacted`` event (in the
trace), sent once the prompt fits. The executor calls ``fit`` and ``after_error``; nothing here
sends a task's own turn.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypedDict

from agentensemble._base.dataclass import dataclass
from agentensemble.context_policy import (
    ContextPolicy,
    cut_outputs,
    cut_text,
    drop_old_tool_results,
    drop_oldest_exchanges,
    oldest_part,
    trim_oldest_turns,
)
from agentensemble.errors import AgentExecutionError, LLMError, ModelSettingsError
from agentensemble.events import ContextCompacted, EventEmitter
from agentensemble.execution.prompts import ContextItem
from agentensemble.llm.types import ChatModel, ChatResponse, Message, ToolSpec, model_label

#: What a compaction that the provider's own count asked for aims at: this share of our count.
AFTER_ERROR_SHARE = 0.75
#: Dropping or summarising turns aims this far below the window, so the next turns fit
#: without another compaction at each one (and a provider's prompt cache keeps its prefix).
COMPACT_TO = 0.75
#: Tokens counted for each message beyond its text (roles, separators), as OpenAI's guide says.
MESSAGE_OVERHEAD = 4

SUMMARY_PROMPT = (
    "You summarise the earlier part of an agent's working conversation so the agent can go on "
    "without it. Keep every fact, number, name, decision, tool result and open question the "
    "agent may still need; drop pleasantries and repetition. Write plain prose, at most a few "
    "hundred words."
)
SUMMARY_HEADING = "Summary of the earlier conversation (older turns were summarised to fit):"
OUTPUT_SUMMARY_PROMPT = (
    "You summarise the output of an earlier task, which a later task reads as context, so it "
    "fits in a small space. Keep every fact, number, name, decision and conclusion the later "
    "task may need; drop repetition. Write plain prose, at most a few hundred words."
)
#: What a summarised output starts with in the prompt's context section.
OUTPUT_SUMMARY_HEADING = (
    "[summary of this output ({size:,} characters), made to fit the context window]"
)
#: How many times the context step recounts and cuts again when the cut outputs' own count and
#: the whole prompt's differ (a token at a join): more is never needed by the estimate.
CUT_ROUNDS = 3

#: Sends one summary request (the executor's model-call bookkeeping: limits, events, cost,
#: a durable step): ``(model, messages) -> response``.
AskModel = Callable[[ChatModel, list[Message]], Awaitable[ChatResponse]]


def is_context_length_error(error: BaseException) -> bool:
    """Whether a failed model call was the provider refusing a prompt over its window."""
    if not isinstance(error, LLMError):
        return False
    from agentensemble.llm._failures import classify

    cause = error.__cause__
    if cause is not None and classify(cause).name == "ContextWindowExceededError":
        return True
    return "ContextWindowExceededError" in str(error)


def model_window(model: object) -> int | None:
    """The prompt tokens ``model`` takes: litellm's ``max_input_tokens`` less the reply's
    ``max_tokens`` when one is set; for a fallback chain the smallest of its members' (whichever
    answers must take the prompt). None when litellm's table does not know a model."""
    members = _members(model)
    windows: list[int] = []
    for member in members:
        window = _table_window(model_label(member))
        if window is None:
            return None
        reply = getattr(member, "max_tokens", None)
        windows.append(window - reply if isinstance(reply, int) and reply < window else window)
    return min(windows) if windows else None


def _members(model: object) -> list[object]:
    chain = getattr(model, "fallback_chain", None)
    if getattr(model, "fallbacks", None) and callable(chain):
        return [member for _, member in chain()]
    return [model]


def _table_window(name: str) -> int | None:
    from agentensemble.llm._model_table import model_info

    info = model_info(name)
    if info is None and "/" in name:
        info = model_info(name.split("/", 1)[1])
    value = info.get("max_input_tokens") if info is not None else None
    return value if isinstance(value, int) and value > 0 else None


class _Step(TypedDict, total=False):
    """What one compaction step did: a ``ContextCompacted`` event's counts."""

    tool_results_elided: int
    messages_dropped: int
    messages_summarized: int
    history_dropped: int
    context_outputs_summarized: int
    context_outputs_cut: int


@dataclass
class Head:
    """The head of a task's conversation, which the turn steps keep: the system prompt at 0,
    ``history`` session-history messages from 1, the task's own prompt at ``prompt_at``, built
    by ``prompt`` from the earlier tasks' outputs ``context`` (None: the prompt is kept as it
    is). The window lowers ``prompt_at`` and ``history`` when it drops history."""

    prompt_at: int
    history: int = 0
    context: Sequence[ContextItem] = ()
    prompt: Callable[[Sequence[ContextItem]], str] | None = None


class TokenCounter:
    """Counts a conversation's tokens, each message once (a turn's count does not grow with
    the turns before it): litellm's counter for an ``LLM``, else a character estimate."""

    def __init__(self, model: object, tools: Sequence[ToolSpec] | None) -> None:
        name = model_label(_members(model)[0])
        self._name = name if _is_llm(model) else None
        self._tools = list(tools) if tools else None
        self._seen: dict[int, tuple[Message, int]] = {}
        self._litellm: Any = None
        self.tools_tokens = 0

    async def start(self) -> None:
        """Load litellm when it counts (off the event loop) and count the tool specs once."""
        if self._name is not None:
            from agentensemble.llm._litellm import is_loaded, load_litellm

            self._litellm = load_litellm() if is_loaded() else await asyncio.to_thread(load_litellm)
        if self._tools:
            self.tools_tokens = len(json.dumps(self._tools, ensure_ascii=False)) // 4 + 1
            if self._litellm is not None:
                try:
                    both = self._litellm.token_counter(
                        model=self._name, messages=[], tools=self._tools
                    )
                    self.tools_tokens = int(both)
                except Exception:  # the estimate stands
                    pass

    def __call__(self, messages: Sequence[Message]) -> int:
        """The conversation's tokens (the tool specs not included: see ``tools_tokens``)."""
        total = 0
        seen = self._seen
        for message in messages:
            known = seen.get(id(message))
            if known is None or known[0] is not message:
                known = (message, self._one(message))
                seen[id(message)] = known
            total += known[1]
        return total

    def text(self, text: str) -> int:
        """The tokens of a text on its own (a part of a message: an earlier task's output)."""
        if self._litellm is not None:
            try:
                return int(self._litellm.token_counter(model=self._name, text=text))
            except Exception:  # the estimate stands
                pass
        return len(text) // 4

    def _one(self, message: Message) -> int:
        if self._litellm is not None:
            try:
                return int(self._litellm.token_counter(model=self._name, messages=[message]))
            except Exception:  # a content shape the counter does not know: estimated
                pass
        text = len(str(message.get("content") or ""))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            text += len(str(function.get("name") or "")) + len(str(function.get("arguments") or ""))
        return text // 4 + MESSAGE_OVERHEAD

    def forget_gone(self, messages: Sequence[Message]) -> None:
        """Drop the counts of messages no longer in the conversation."""
        kept = {id(message) for message in messages}
        for key in [key for key in self._seen if key not in kept]:
            del self._seen[key]


def _is_llm(model: object) -> bool:
    import sys

    module = sys.modules.get("agentensemble.llm.litellm_model")
    members = _members(model)
    return module is not None and all(isinstance(m, module.LLM) for m in members)


def summarizer(policy: ContextPolicy) -> ChatModel | None:
    """The policy's ``summarize_with`` as a ChatModel (a name becomes an ``LLM``), its
    settings checked now (a missing key fails the task before its first call, not at the
    first summary): ``ModelSettingsError`` naming the field."""
    chosen = policy.summarize_with
    if chosen is None:
        return None
    if isinstance(chosen, str):
        from agentensemble.llm.litellm_model import LLM

        chosen = LLM(chosen)
    check = getattr(chosen, "check_settings", None)
    if callable(check):
        try:
            check()
        except ModelSettingsError as error:
            raise ModelSettingsError(
                f"context_policy.summarize_with: {error}", missing_key=error.missing_key
            ) from None
    model: ChatModel = chosen
    return model


class ContextWindow:
    """One task's context policy at run time (see the module's doc)."""

    def __init__(
        self,
        policy: ContextPolicy,
        *,
        model: ChatModel,
        tools: Sequence[ToolSpec] | None,
        task: str,
        role: str,
        task_name: str | None,
        ask: AskModel,
        emitter: EventEmitter | None,
    ) -> None:
        self.policy = policy
        self._model = model
        self._task = task
        self._role = role
        self._task_name = task_name
        self._ask = ask
        self._emitter = emitter
        self._count = TokenCounter(model, tools)
        self._summarizer = summarizer(policy)
        self._output_summaries: dict[int, str] = {}  # an earlier output's summary, made once
        self._started = False
        # (messages counted, their tokens, the last of them): the conversation only grows
        # between compactions, so a turn counts only what it added (flat per turn)
        self._sized: tuple[int, int, Message | None] = (0, 0, None)
        self.limit: int | None = (
            policy.max_prompt_tokens
            if isinstance(policy.max_prompt_tokens, int)
            else model_window(model)
        )

    async def _start(self) -> None:
        if not self._started:
            self._started = True
            await self._count.start()

    async def fit(self, messages: list[Message], head: int | Head) -> None:
        """Before a model call: bring ``messages`` (changed in place) inside the window, or
        raise ``AgentExecutionError`` before anything is sent. ``head``: the messages the turn
        steps keep (the system prompt, session history, the task's prompt), as a count or a
        ``Head`` that also lets the head steps shorten them."""
        if self.limit is None:  # a window nobody knows: only a provider's refusal compacts
            return
        await self._start()
        await self._compact(messages, head, self.limit, "window")

    async def after_error(self, messages: list[Message], head: int | Head) -> bool:
        """After a provider's context-length error: compact once, to below our own count of
        what it refused; whether anything changed (else the error stands)."""
        await self._start()
        size = self._size(messages) + self._count.tools_tokens
        target = int(size * AFTER_ERROR_SHARE)
        if self.limit is not None:
            target = min(target, self.limit)
        return await self._compact(messages, head, target, "provider_error", strict=False)

    def _size(self, messages: list[Message]) -> int:
        """The conversation's tokens, counting only the messages added since the last call
        (everything again if something before them changed)."""
        counted, total, last = self._sized
        if not (0 < counted <= len(messages) and messages[counted - 1] is last):
            counted, total = 0, 0
        total += self._count(messages[counted:])
        self._sized = (len(messages), total, messages[-1] if messages else None)
        return total

    async def _compact(
        self,
        messages: list[Message],
        at: int | Head,
        limit: int,
        reason: str,
        *,
        strict: bool = True,
    ) -> bool:
        count, tools = self._count, self._count.tools_tokens
        budget = max(1, limit - tools)
        before = self._size(messages)
        if before <= budget:
            return False
        head = at if isinstance(at, Head) else Head(prompt_at=at - 1)
        aim = max(1, int(budget * COMPACT_TO))
        steps: list[tuple[int, int, _Step]] = []  # (tokens before, after, counts) of each step
        shorter = drop_old_tool_results(messages, self.policy.keep_tool_results)
        elided = sum(1 for a, b in zip(messages, shorter, strict=True) if a is not b)
        summarized = dropped = 0
        if count(shorter) > budget:
            if self._summarizer is not None:
                shorter, summarized = await self._summarised(shorter, head.prompt_at + 1, aim)
            else:
                trimmed = trim_oldest_turns(shorter, head.prompt_at + 1, aim, count)
                dropped = len(shorter) - len(trimmed)
                shorter = trimmed
        after = count(shorter)
        if elided or summarized or dropped:
            counts: _Step = {
                "tool_results_elided": elided,
                "messages_dropped": dropped,
                "messages_summarized": summarized,
            }
            steps.append((before, after, counts))
        if after > budget and head.history:  # the head itself is over: history first
            shorter, counts = self._drop_history(shorter, head, aim)
            steps.append((after, count(shorter), counts))
            after = steps[-1][1]
        if after > budget and head.context and head.prompt is not None:  # then earlier outputs
            shorter, counts = await self._shorten_context(shorter, head, aim)
            if counts:
                steps.append((after, count(shorter), counts))
                after = steps[-1][1]
        if strict and after > budget:
            raise AgentExecutionError(
                f"Task {self._task!r} (agent {self._role!r}): the prompt is {after + tools} "
                f"tokens after compaction (it was {before + tools}), over the {limit}-token "
                f"window of {model_label(self._model)}; what is left is the system prompt, the "
                "task's own prompt (earlier tasks' outputs cut to their markers, session "
                "history dropped) and the newest turn. Shorten the task's description or the "
                "agent's instructions, set keep_tool_results lower, or use a model with a "
                "larger window"
            )
        if not steps:
            return False
        messages[:] = shorter
        count.forget_gone(messages)
        self._sized = (len(messages), after, messages[-1] if messages else None)
        if self._emitter is not None:
            for tokens_before, tokens_after, step in steps:
                self._emitter.emit(
                    ContextCompacted(
                        agent_role=self._role,
                        task_name=self._task_name,
                        model=model_label(self._model),
                        reason=reason,
                        limit=limit,
                        tokens_before=tokens_before + tools,
                        tokens_after=tokens_after + tools,
                        **step,
                    )
                )
        return True

    def _drop_history(
        self, messages: list[Message], head: Head, aim: int
    ) -> tuple[list[Message], _Step]:
        """The oldest session-history exchanges removed until the prompt is down to ``aim``
        (``head`` moved to match); the step's counts."""
        shorter = drop_oldest_exchanges(messages, 1, 1 + head.history, aim, self._count)
        gone = len(messages) - len(shorter)
        head.history -= gone
        head.prompt_at -= gone
        return shorter, {"history_dropped": gone}

    async def _shorten_context(
        self, messages: list[Message], head: Head, aim: int
    ) -> tuple[list[Message], _Step]:
        """Earlier tasks' outputs in the task's prompt shortened, oldest first, until the
        prompt is down to ``aim``: each summarised by ``summarize_with`` (once a task: kept
        for the next compaction), then, if still over, cut from its end (``cut_outputs``,
        always from the output as it came, so a later cut does not cut a cut). The step's
        counts, empty when nothing changed."""
        count, items = self._count, list(head.context)
        shown = [self._output_summaries.get(i, item.output) for i, item in enumerate(items)]
        summarised = 0
        shorter = messages
        if self._summarizer is not None:
            for index, item in enumerate(items):
                if count(shorter) <= aim:
                    break
                if index not in self._output_summaries:
                    self._output_summaries[index] = await self._summarise_output(item)
                if self._output_summaries[index] != shown[index]:
                    shown[index] = self._output_summaries[index]
                    summarised += 1
                    shorter = _with_prompt(shorter, head, items, shown)
        cut = 0
        if count(shorter) > aim:
            empty = count(_with_prompt(shorter, head, items, [""] * len(items)))
            room = aim - empty
            for _ in range(CUT_ROUNDS):  # a join's token may differ from the parts' sum
                outputs = cut_outputs(shown, max(0, room), count.text)
                shorter = _with_prompt(messages, head, items, outputs)
                over = count(shorter) - aim
                if over <= 0 or room <= 0:
                    break
                room -= over
            cut = sum(1 for a, b in zip(shown, outputs, strict=True) if a is not b)
        if not summarised and not cut:
            return messages, {}
        return shorter, {"context_outputs_summarized": summarised, "context_outputs_cut": cut}

    async def _summarise_output(self, item: ContextItem) -> str:
        """One earlier task's output as a summary (the policy's model, asked like a turns'
        summary: traced, budgeted), under a line saying it is one; the output itself when the
        summary would be no shorter."""
        model = self._summarizer
        assert model is not None
        text = item.output
        window = model_window(model)
        if window is not None:  # what the summariser cannot take is cut before it is sent
            text = cut_text(text, max(0, window - 1000) * 3)
        request: list[Message] = [
            {"role": "system", "content": OUTPUT_SUMMARY_PROMPT},
            {
                "role": "user",
                "content": f"Task: {item.task_description} ({item.agent_role})\n\n{text}",
            },
        ]
        response = await self._ask(model, request)
        heading = OUTPUT_SUMMARY_HEADING.format(size=len(item.output))
        summary = f"{heading}\n{(response.content or '').strip()}"
        return summary if len(summary) < len(item.output) else item.output

    async def _summarised(
        self, messages: list[Message], head: int, budget: int
    ) -> tuple[list[Message], int]:
        """The oldest turns that must go replaced by one summary message (made by the
        policy's model); the number of messages it replaced."""
        reserve = budget // 10  # room for the summary itself
        old, rest = oldest_part(messages, head, max(1, budget - reserve), self._count)
        if not old:
            return messages, 0
        model = self._summarizer
        assert model is not None
        request: list[Message] = [
            {"role": "system", "content": SUMMARY_PROMPT},
            {"role": "user", "content": transcript(old)},
        ]
        response = await self._ask(model, request)
        summary: Message = {
            "role": "user",
            "content": f"{SUMMARY_HEADING}\n{(response.content or '').strip()}",
        }
        return [*rest[:head], summary, *rest[head:]], len(old)


def _with_prompt(
    messages: list[Message], head: Head, items: list[ContextItem], outputs: list[str]
) -> list[Message]:
    """``messages`` with the task's prompt rebuilt from ``items`` showing ``outputs`` (the
    section headings stay: the model still sees which task each output came from)."""
    assert head.prompt is not None
    shown = [
        item
        if item.output == output
        else ContextItem(item.task_description, item.agent_role, output)
        for item, output in zip(items, outputs, strict=True)
    ]
    prompt = messages[head.prompt_at]
    return [
        *messages[: head.prompt_at],
        {**prompt, "content": head.prompt(shown)},
        *messages[head.prompt_at + 1 :],
    ]


def transcript(messages: Sequence[Message]) -> str:
    """The turns a summary replaces, as text a model reads: who said what, which tool was
    called with what, what it answered (placeholders as they are)."""
    lines: list[str] = []
    for message in messages:
        role = str(message.get("role"))
        content = str(message.get("content") or "").strip()
        if role == "tool":
            lines.append(f"[tool result] {content}")
            continue
        if content:
            lines.append(f"[{role}] {content}")
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            lines.append(
                f"[{role} called {function.get('name')}] {function.get('arguments') or ''}"
            )
    return "\n".join(lines)


__all__ = [
    "ContextWindow",
    "Head",
    "TokenCounter",
    "is_context_length_error",
    "model_window",
    "summarizer",
    "transcript",
]
