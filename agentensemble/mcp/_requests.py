"""A server's requests to us: ``sampling/createMessage`` (ask our model) and
``elicitation/create`` (ask the user), each put to the run's review handler first.

Both arrive while one of the server's tools is being called (the SDK calls back from the
connection's owner task). They are answered in the context of that call — the most recent call
of this server still in progress — so the review handler, the run's events, its
``UsageLimits`` meter and its trace are the ones of the run that made the call. A request
outside any call of ours is refused.

Sampling (only with ``sampling=True``): the reviewer sees the server, the model that would
answer, the token cap and every message; ``Continue`` or ``Edit`` approves, ``ExitEarly``
refuses. Approved, ``sampling_model`` (default: the model of the agent whose tool call it is)
answers with no tools and no context but the server's messages, its ``max_tokens`` capped at
``max_sampling_tokens``; at most ``max_samples_per_call`` requests per tool call; counted on
the run's limits, priced and reported as model-call events. No handler: refused with an MCP
error saying why.

Elicitation: the reviewer sees the server's message and the schema it asks for, and answers
with ``Edit`` and a JSON object, which is checked against the schema (bounded regexes) before it
is sent; ``Continue`` declines, ``ExitEarly`` cancels. No handler, a URL-mode request, or an
answer that does not fit the schema: declined.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import sys
import time
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import Any, TypeVar

from agentensemble._base.dataclass import dataclass
from agentensemble.errors import UsageLimitExceeded
from agentensemble.events import LLMCallCompleted, LLMCallFailed, LLMCallStarted
from agentensemble.limits import after_model_call, before_model_call
from agentensemble.logging import get_logger
from agentensemble.mcp._content import clean, content_text
from agentensemble.mcp._schema_check import schema_errors, schema_validator
from agentensemble.redaction import redact_text
from agentensemble.run_context import new_id_hex
from agentensemble.tools._approval import arequest_approval
from agentensemble.tools.context import current_tool_context

DEFAULT_MAX_SAMPLING_TOKENS = 1_024
DEFAULT_MAX_SAMPLES_PER_CALL = 3
MAX_SAMPLING_MESSAGES = 50
MAX_SAMPLING_CHARS = 50_000
MAX_ELICIT_MESSAGE_CHARS = 4_000
MAX_ELICIT_SCHEMA_CHARS = 20_000
MAX_ELICIT_ANSWER_CHARS = 20_000

SAMPLING_PROMPT = (
    "An MCP server asks to use our model, as shown above. Continue lets the model answer it "
    "(no tools, nothing of the run but these messages); exit refuses."
)
ELICITATION_PROMPT = (
    "An MCP server asks for the input described above. To answer, edit with a JSON object that "
    "matches the schema shown (on the console: e {...}); Continue declines; exit cancels."
)

_log = get_logger()
T = TypeVar("T")


@dataclass
class CallScope:
    """One tool call in progress: its context (the run's) and the samples it asked for."""

    context: contextvars.Context
    samples: int = 0


async def in_call(scope: CallScope, work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``work`` as a task in (a copy of) the call's context: the run's handler, meter, ids."""
    task: asyncio.Task[T] = scope.context.run(asyncio.ensure_future, work())
    return await task


def _error(message: str) -> Any:
    from mcp_types import INVALID_REQUEST, ErrorData

    text = redact_text(message)
    _log.warning("MCP server request refused", reason=text)
    return ErrorData(code=INVALID_REQUEST, message=text)


def _declined(action: str = "decline") -> Any:
    from mcp_types import ElicitResult

    return ElicitResult(action=action)  # type: ignore[arg-type]


def _sampled_messages(params: Any) -> tuple[list[dict[str, Any]], str | None]:
    """The server's messages as ours (text only), or a reason to refuse them."""
    listed = list(getattr(params, "messages", None) or [])
    if len(listed) > MAX_SAMPLING_MESSAGES:
        return [], f"it sent {len(listed)} messages (at most {MAX_SAMPLING_MESSAGES})"
    messages: list[dict[str, Any]] = []
    system = getattr(params, "system_prompt", None)
    if system:
        messages.append({"role": "system", "content": drop_and_redact(str(system))})
    for message in listed:
        content = getattr(message, "content", None)
        parts = content if isinstance(content, list) else [content]
        text = "\n".join(content_text(part) for part in parts)
        role = "assistant" if getattr(message, "role", "user") == "assistant" else "user"
        messages.append({"role": role, "content": drop_and_redact(text)})
    size = sum(len(message["content"]) for message in messages)
    if size > MAX_SAMPLING_CHARS:
        return [], f"its messages hold {size} characters (at most {MAX_SAMPLING_CHARS})"
    return messages, None


def drop_and_redact(text: str) -> str:
    return clean(text, MAX_SAMPLING_CHARS + 1)


def _shown_sampling(
    label: str, model: str, max_tokens: int, messages: list[dict[str, Any]], *, capped: bool = True
) -> str:
    bound = f"up to {max_tokens} tokens"
    if not capped:  # the reviewer must not approve a bound that does not hold
        bound += (
            f" (not enforced: this model takes no token cap; {max_tokens * 8} characters are sent)"
        )
    lines = [f"{label} asks model {model!r} for an answer of {bound} to:"]
    lines += [f"[{message['role']}] {message['content']}" for message in messages]
    return "\n".join(lines)


class ServerRequests:
    """Answers one server's sampling and elicitation requests (see the module docs)."""

    def __init__(
        self,
        label: str,
        *,
        sampling: bool,
        sampling_model: Any,
        max_sampling_tokens: int,
        max_samples_per_call: int,
        current_call: Callable[[], CallScope | None],
    ) -> None:
        self.label = label
        self.sampling = sampling
        self._model_setting = sampling_model
        self._model: Any = None
        self.max_tokens = max_sampling_tokens
        self.max_per_call = max_samples_per_call
        self._current = current_call

    def callbacks(self) -> dict[str, Any]:
        """The ``ClientSession`` callbacks: sampling only when allowed (otherwise the client does
        not offer it, and the SDK refuses a server that asks anyway)."""
        found: dict[str, Any] = {"elicitation_callback": self.elicit}
        if self.sampling:
            found["sampling_callback"] = self.sample
        return found

    # -- sampling ----------------------------------------------------------------------------

    async def sample(self, _context: Any, params: Any) -> Any:
        scope = self._current()
        if scope is None:
            return _error(f"{self.label} asked our model outside a tool call: refused")
        if scope.samples >= self.max_per_call:
            return _error(
                f"{self.label} asked our model more than {self.max_per_call} times in one tool "
                "call (max_samples_per_call): refused"
            )
        scope.samples += 1
        return await in_call(scope, lambda: self._sample(params))

    def _chosen_model(self, agent_model: Any) -> Any:
        """``sampling_model`` (made once), else the agent's model; an ``LLM`` capped at
        ``max_sampling_tokens`` (None: no model to answer with)."""
        if self._model_setting is None:
            return None if agent_model is None else self._capped(agent_model)
        if self._model is None:
            self._model = self._capped(self._model_setting)
        return self._model

    def _capped(self, chosen: Any) -> Any:
        """``chosen`` with every model that may answer capped at ``max_tokens``: an ``LLM`` and
        each of its ``fallbacks``, each model of a ``FallbackModel`` (a fallback answering
        uncapped would spend what the reviewer was told it would not). Another ``ChatModel``
        takes no cap; ``can_cap`` says so, and the reviewer is told."""
        if isinstance(chosen, str):
            from agentensemble.llm.litellm_model import LLM

            return LLM(model=chosen, max_tokens=self.max_tokens)
        llms = sys.modules.get("agentensemble.llm.litellm_model")
        if llms is not None and isinstance(chosen, llms.LLM):
            cap = min(chosen.max_tokens or self.max_tokens, self.max_tokens)
            fallbacks = [self._capped(model) for model in chosen.fallbacks]
            if chosen.max_tokens == cap and fallbacks == chosen.fallbacks:
                return chosen
            capped = chosen.model_copy(update={"max_tokens": cap, "fallbacks": fallbacks})
            capped._chain = None  # the original's chain, if made, holds its uncapped fallbacks
            return capped
        chains = sys.modules.get("agentensemble.llm.fallback")
        if chains is not None and isinstance(chosen, chains.FallbackModel):
            return chains.FallbackModel(
                [self._capped(model) for model in chosen.models], fallback_on=chosen.fallback_on
            )
        return chosen

    def can_cap(self, model: Any) -> bool:
        """Whether every model that may answer through ``model`` is capped at ``max_tokens``."""
        llms = sys.modules.get("agentensemble.llm.litellm_model")
        if llms is not None and isinstance(model, llms.LLM):
            return all(self.can_cap(fallback) for fallback in model.fallbacks)
        chains = sys.modules.get("agentensemble.llm.fallback")
        if chains is not None and isinstance(model, chains.FallbackModel):
            return all(self.can_cap(member) for member in model.models)
        return False

    async def _sample(self, params: Any) -> Any:
        from agentensemble.llm.types import model_label

        context = current_tool_context()
        if context.review_handler is None:
            return _error(
                f"{self.label} asked our model, and sampling needs a review handler to approve "
                "each request (Ensemble(review_handler=...)): refused"
            )
        messages, problem = _sampled_messages(params)
        if problem:
            return _error(f"{self.label} asked our model, but {problem}: refused")
        model = self._chosen_model(context.model)
        if model is None:
            return _error(f"{self.label} asked our model, and there is none to answer: refused")
        label = model_label(model)
        asked = int(getattr(params, "max_tokens", 0) or 0)
        max_tokens = min(asked, self.max_tokens) if asked > 0 else self.max_tokens
        shown = _shown_sampling(self.label, label, max_tokens, messages, capped=self.can_cap(model))
        try:
            decision = await arequest_approval(
                f"{self.label} sampling", shown, prompt=SAMPLING_PROMPT
            )
        except Exception as error:  # the review failed (timed out with FAIL, refused the request)
            return _error(f"the review of {self.label}'s sampling request failed: {error}")
        if getattr(decision, "decision", None) == "exit_early":
            reason = getattr(decision, "reason", None) or "no reason given"
            return _error(f"the reviewer refused {self.label}'s sampling request: {reason}")
        try:
            await before_model_call(model, messages, None)
        except UsageLimitExceeded as error:
            return _error(f"{self.label} asked our model past the run's usage limits: {error}")
        try:
            response = await self._complete(context, model, label, messages)
        except Exception as error:
            return _error(f"our model failed to answer {self.label}: {type(error).__name__}")
        from mcp_types import CreateMessageResult, TextContent

        text = clean(response.content or "", max_tokens * 8)  # a bound for any ChatModel too
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=text),
            model=label,
            stop_reason="maxTokens" if response.finish_reason == "length" else "endTurn",
        )

    async def _complete(
        self, context: Any, model: Any, label: str, messages: list[dict[str, Any]]
    ) -> Any:
        """One model call, reported and counted like the agent's own (events, limits, cost)."""
        from agentensemble.llm.cost import cost_usd

        role, call_id = f"{context.agent_role or 'agent'} (sampling for {self.label})", new_id_hex()
        context.emit_event(LLMCallStarted(role, label, call_id, None, list(messages)))
        started = time.perf_counter()
        try:
            response = await model.complete(messages)
        except Exception as error:
            elapsed = timedelta(seconds=time.perf_counter() - started)
            context.emit_event(LLMCallFailed(role, label, call_id, elapsed, error))
            raise
        cost = cost_usd(response.usage, label, response.model)
        after_model_call(response.usage, cost)
        context.emit_event(
            LLMCallCompleted(
                agent_role=role,
                model=label,
                duration=timedelta(seconds=time.perf_counter() - started),
                usage=response.usage,
                tool_calls=0,
                call_id=call_id,
                response=response,
                cost_usd=cost,
            )
        )
        return response

    # -- elicitation -------------------------------------------------------------------------

    async def elicit(self, _context: Any, params: Any) -> Any:
        scope = self._current()
        if scope is None:
            _log.warning("MCP server asked for input outside a tool call", server=self.label)
            return _declined()
        return await in_call(scope, lambda: self._elicit(params))

    async def _elicit(self, params: Any) -> Any:
        context = current_tool_context()
        if context.review_handler is None:
            _log.warning("MCP elicitation declined: no review handler", server=self.label)
            return _declined()
        schema = getattr(params, "requested_schema", None)
        if getattr(params, "mode", "form") != "form" or not isinstance(schema, dict):
            _log.warning("MCP elicitation declined: not a form request", server=self.label)
            return _declined()
        schema_text = json.dumps(schema, ensure_ascii=False)
        if len(schema_text) > MAX_ELICIT_SCHEMA_CHARS:
            _log.warning("MCP elicitation declined: schema too large", server=self.label)
            return _declined()
        message = clean(getattr(params, "message", ""), MAX_ELICIT_MESSAGE_CHARS)
        shown = (
            f"{self.label} asks: {message}\nAnswer with JSON matching: {redact_text(schema_text)}"
        )
        try:
            decision = await arequest_approval(
                f"{self.label} elicitation", shown, prompt=ELICITATION_PROMPT
            )
        except Exception as error:
            _log.warning(
                "MCP elicitation declined: review failed", server=self.label, error=str(error)
            )
            return _declined()
        kind = getattr(decision, "decision", None)
        if kind == "exit_early":
            return _declined("cancel")
        if kind != "edit":
            return _declined()
        return self._accepted(str(getattr(decision, "revised_output", "")), schema)

    def _accepted(self, answer: str, schema: dict[str, Any]) -> Any:
        from mcp_types import ElicitResult

        from agentensemble.untrusted import UntrustedInputError, parse_json

        problems: list[str]
        try:
            data = parse_json(
                answer[: MAX_ELICIT_ANSWER_CHARS + 1],
                what="the reviewer's answer",
                max_chars=MAX_ELICIT_ANSWER_CHARS,
            )
        except UntrustedInputError as error:
            problems = [str(error)]
        else:
            if not isinstance(data, dict):
                problems = ["the answer is not a JSON object"]
            else:
                problems = schema_errors(schema_validator(schema), data) or [
                    f"{key!r} is not a string, number, boolean or list of strings"
                    for key, value in data.items()
                    if not _primitive(value)
                ]
                if not problems:
                    return ElicitResult(action="accept", content=data)
        _log.warning(
            "MCP elicitation declined: the answer does not fit the schema",
            server=self.label,
            problems="; ".join(problems),
        )
        return _declined()


def _primitive(value: object) -> bool:
    if isinstance(value, list):
        return all(isinstance(item, str) for item in value)
    return value is None or isinstance(value, (str, int, float, bool))


__all__ = [
    "DEFAULT_MAX_SAMPLES_PER_CALL",
    "DEFAULT_MAX_SAMPLING_TOKENS",
    "CallScope",
    "ServerRequests",
    "in_call",
]
