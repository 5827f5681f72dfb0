"""Chat models for tests and offline demos: scripted answers, no network."""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import json
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentensemble.llm.response_format import ResponseFormat
from agentensemble.llm.streaming import current_sink, stream_pieces
from agentensemble.llm.types import ChatResponse, Message, ToolCall, ToolSpec
from agentensemble.outputs import TokenUsage

_ids = itertools.count(1)


class ScriptExhaustedError(AssertionError):
    """The model was asked for more turns than its script holds."""


def _usage(messages: Sequence[Message], content: str | None) -> TokenUsage:
    """A rough, deterministic token count (4 characters a token) so usage adds up in tests."""
    prompt = sum(len(str(m.get("content") or "")) for m in messages) // 4 + 1
    completion = len(content or "") // 4 + 1
    return TokenUsage(
        prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
    )


def _streamed(response: ChatResponse) -> ChatResponse:
    """In a streaming run (``Ensemble.astream``), hand the text to the sink piece by piece."""
    sink = current_sink()
    reasoning = getattr(sink, "reasoning", None)
    if reasoning is not None and response.reasoning:
        for piece in stream_pieces(response.reasoning):
            reasoning(piece)
    if sink is not None and response.content:
        for piece in stream_pieces(response.content):
            sink.text(piece)
    return response


def text(content: str) -> ChatResponse:
    """A final text answer."""
    return ChatResponse(content=content, finish_reason="stop")


def tool_call(name: str, arguments: dict[str, Any] | str | None = None) -> ChatResponse:
    """A turn with one tool call; ``arguments`` as a dict or raw JSON text (which may be bad)."""
    return tool_calls((name, arguments))


def tool_calls(*calls: tuple[str, dict[str, Any] | str | None]) -> ChatResponse:
    """A turn with several tool calls, in order."""
    return ChatResponse(
        tool_calls=[
            ToolCall(
                id=f"call_{next(_ids)}",
                name=name,
                arguments=args if isinstance(args, str) else json.dumps(args or {}),
            )
            for name, args in calls
        ],
        finish_reason="tool_calls",
    )


@dataclass(frozen=True)
class ModelRequest:
    """One request the model received: a snapshot of the conversation and the tool specs, and
    the native ``response_format`` when the model declared it honours one."""

    messages: list[Message]
    tools: list[ToolSpec] | None
    response_format: ResponseFormat | None = None

    @property
    def last_user_content(self) -> str:
        """The text of the last user message (the task prompt on a task's first turn)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return str(message.get("content") or "")
        return ""

    @property
    def tool_results(self) -> list[str]:
        """Contents of the tool messages that follow the last assistant turn."""
        results: list[str] = []
        for message in reversed(self.messages):
            if message.get("role") != "tool":
                break
            results.insert(0, str(message.get("content") or ""))
        return results


@dataclass
class _Recording:
    requests: list[ModelRequest] = field(default_factory=list)
    native_structured_output: bool = False

    async def supports_response_format(self) -> bool:
        """As an LLM whose provider has native structured output, when built with
        ``native_structured_output=True``; otherwise the schema goes into the prompt."""
        return self.native_structured_output

    def _record(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] | None,
        response_format: ResponseFormat | None = None,
    ) -> None:
        self.requests.append(
            ModelRequest(
                messages=[dict(m) for m in messages],
                tools=list(tools) if tools else None,
                response_format=response_format,
            )
        )


class ScriptedChatModel(_Recording):
    """Answers from a FIFO of responses (ChatResponse or plain text), recording every request.

    In a streaming run (``Ensemble.astream``) its text arrives as ``TokenDelta`` events, word
    by word, so a UI can be tested offline.

    >>> model = ScriptedChatModel([tool_call("add", {"a": 1, "b": 2}), "3"])
    """

    model = "scripted"

    def __init__(
        self,
        responses: Iterable[ChatResponse | str] = (),
        *,
        native_structured_output: bool = False,
    ) -> None:
        super().__init__(native_structured_output=native_structured_output)
        self._script: list[ChatResponse] = [text(r) if isinstance(r, str) else r for r in responses]

    def add(self, *responses: ChatResponse | str) -> ScriptedChatModel:
        """Append more responses to the script."""
        self._script += [text(r) if isinstance(r, str) else r for r in responses]
        return self

    @property
    def remaining(self) -> int:
        return len(self._script)

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: ResponseFormat | None = None,
    ) -> ChatResponse:
        self._record(messages, tools, response_format)
        if not self._script:
            last = str(messages[-1].get("content") if messages else "")[:200]
            raise ScriptExhaustedError(
                f"ScriptedChatModel has no response left for request {len(self.requests)} "
                f"(last message: {last!r})"
            )
        response = self._script.pop(0)
        if response.usage == TokenUsage():
            # every other field kept: reasoning, refusal and provider parts a test scripted
            response = dataclasses.replace(
                response, usage=_usage(messages, response.content), model=self.model
            )
        return _streamed(response)

    def assert_all_consumed(self) -> None:
        """Fail when scripted responses were left unused (the run took fewer turns)."""
        if self._script:
            raise AssertionError(
                f"{len(self._script)} scripted response(s) were never used "
                f"after {len(self.requests)} request(s)"
            )


FunctionResult = ChatResponse | str
ModelFunction = Callable[
    [list[Message], list[ToolSpec] | None], FunctionResult | Awaitable[FunctionResult]
]


class FunctionChatModel(_Recording):
    """Answers by calling ``fn(messages, tools)`` (sync or async) -> ChatResponse or text."""

    model = "function"

    def __init__(self, fn: ModelFunction, *, native_structured_output: bool = False) -> None:
        super().__init__(native_structured_output=native_structured_output)
        self._fn = fn

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: ResponseFormat | None = None,
    ) -> ChatResponse:
        self._record(messages, tools, response_format)
        result = self._fn(list(messages), list(tools) if tools else None)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, str):
            return _streamed(
                ChatResponse(content=result, usage=_usage(messages, result), finish_reason="stop")
            )
        if not isinstance(result, ChatResponse):
            raise TypeError(
                f"a FunctionChatModel function must return a ChatResponse or str, "
                f"got {type(result).__name__}"
            )
        return _streamed(result)


__all__ = [
    "FunctionChatModel",
    "ModelRequest",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "text",
    "tool_call",
    "tool_calls",
]
