"""``LLM``: the ChatModel that reaches any provider through litellm, with our retry policy."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    field_serializer,
    field_validator,
)

from agentensemble.errors import LLMError
from agentensemble.llm import _model_table, _openai_lane, _openai_stream
from agentensemble.llm._config_checks import api_base_problem, check_model_settings
from agentensemble.llm._lanes import Lane, LaneSetting, choose_lane
from agentensemble.llm._litellm import is_loaded, load_litellm
from agentensemble.llm._litellm_stream import StreamAttempts, stream_turn
from agentensemble.llm._secrets import masked, register_setting_secrets
from agentensemble.llm._sendable import sendable
from agentensemble.llm.rate_limit import RateLimit, rate_limited
from agentensemble.llm.response_format import ResponseFormat, litellm_supports_schema
from agentensemble.llm.retry import RetryPolicy
from agentensemble.llm.streaming import current_sink
from agentensemble.llm.types import ChatResponse, Message, ToolCall, ToolSpec
from agentensemble.outputs import TokenUsage
from agentensemble.redaction import register_secret

#: Extra seconds past ``timeout`` before our own guard cancels a call litellm did not time out.
_GUARD_SECONDS = 5.0


def with_content(message: Message) -> dict[str, Any]:
    """A copy of ``message`` whose assistant turn carries ``content`` even with only tool calls:
    ``""``, never missing or null, which chat templates of local servers (llama.cpp,
    llama-cpp-python, vLLM) require; providers that drop empty text (Anthropic) drop it."""
    copy = dict(message)
    if copy.get("role") == "assistant" and copy.get("content") is None:
        copy["content"] = ""
    return copy


class LLM(BaseModel):
    """A chat model reached through litellm: ``LLM("openai/gpt-4o-mini")``.

    ``model`` is a litellm model string (``provider/name``). ``api_base`` points at any
    OpenAI-compatible server. Transient failures are retried by ``retry_policy`` (default:
    ``max_retries`` retries after the first attempt); the openai SDK's own retries are off.
    Other keyword arguments are passed to ``litellm.acompletion`` as they are.
    ``api_key`` is a SecretStr: it never shows in repr, str or errors.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    model: str = Field(min_length=1)
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, gt=0)
    api_base: str | None = None
    api_key: SecretStr | None = None
    timeout: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0)
    retry_policy: RetryPolicy | None = None
    rate_limit: RateLimit | None = None
    lane: LaneSetting = "auto"
    extra: dict[str, Any] = Field(default_factory=dict, repr=False)
    _settings_checked: bool = PrivateAttr(default=False)

    def __init__(
        self,
        model: str,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        api_base: str | None = None,
        api_key: str | SecretStr | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        retry_policy: RetryPolicy | None = None,
        rate_limit: RateLimit | None = None,
        lane: LaneSetting = "auto",
        **params: Any,
    ) -> None:
        """``model`` positionally or by keyword; unknown keywords (or ``extra={...}``) are
        passed to ``litellm.acompletion``."""
        extra = dict(params.pop("extra", None) or {})
        extra.update(params)
        super().__init__(
            model=model,
            temperature=temperature,
            max_tokens=max_tokens,
            api_base=api_base,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            retry_policy=retry_policy,
            rate_limit=rate_limit,
            lane=lane,
            extra=extra,
        )

    @field_validator("api_base")
    @classmethod
    def _api_base_has_scheme(cls, value: str | None) -> str | None:
        problem = api_base_problem(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value

    def model_post_init(self, context: Any, /) -> None:
        """Register the key and secret-looking extra settings (headers, credentials) by value,
        so a provider echoing one cannot leak it into an error, a log line or an event."""
        if self.api_key is not None:
            register_secret(self.api_key.get_secret_value())
        register_setting_secrets(self.extra)

    @field_serializer("extra")
    def _extra_redacted(self, extra: dict[str, Any]) -> Any:
        """Dumped like ``api_key``: headers, cookies, credentials, tokens and keys passed through
        are masked (``model_dump()`` is for showing and saving settings, not for calling)."""
        return masked(extra)

    def check_settings(self) -> None:
        """Raise ``ConfigurationError`` for settings that cannot work (a missing API key, a base
        URL without a scheme), naming the variable or setting. Done before a run's first call."""
        if self._settings_checked:
            return
        check_model_settings(
            self.model,
            has_key=self.api_key is not None,
            extra=self.extra,
            api_base=self.api_base,
        )
        self._settings_checked = True

    @property
    def effective_lane(self) -> Lane:
        """The lane calls take now: ``"openai"`` (straight to an OpenAI-compatible endpoint,
        litellm not imported) or ``"litellm"``. See ``_lanes.choose_lane`` for the rule."""
        return choose_lane(
            self.model,
            self.extra,
            self.lane,
            has_key=self.api_key is not None or bool(self.extra.get("api_key")),
            api_base=self.api_base,
        )

    @property
    def policy(self) -> RetryPolicy:
        """The retry policy in force."""
        return self.retry_policy or RetryPolicy(max_attempts=self.max_retries + 1)

    def request_kwargs(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] | None = None,
        response_format: ResponseFormat | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments for ``litellm.acompletion`` (secrets included: never log)."""
        kwargs: dict[str, Any] = dict(self.extra)
        kwargs.update(
            model=self.model,
            messages=sendable([with_content(message) for message in messages]),
            timeout=self.timeout,
            max_retries=0,  # the openai SDK retries twice by default; ours is the only layer
        )
        if tools:
            kwargs["tools"] = sendable(list(tools))
            # said explicitly: some OpenAI-compatible servers ignore tools without it
            kwargs.setdefault("tool_choice", "auto")
        if response_format is not None:
            kwargs["response_format"] = response_format.to_openai()
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key.get_secret_value()
        kwargs.pop("num_retries", None)  # litellm's own retry layer stays off
        return kwargs

    async def supports_response_format(self) -> bool:
        """Whether litellm knows this model takes a JSON-schema ``response_format``."""
        if self.effective_lane == "openai":  # litellm's own table, read without importing it
            return await asyncio.to_thread(_model_table.supports_response_schema, self.model)
        litellm = load_litellm() if is_loaded() else await asyncio.to_thread(load_litellm)
        return litellm_supports_schema(litellm, self.model)

    @rate_limited  # waits for ``rate_limit``'s bucket first, whichever lane the call takes
    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: ResponseFormat | None = None,
    ) -> ChatResponse:
        """One model turn; ``LLMError`` once the provider fails for good, ``ConfigurationError``
        (before any request) for settings that cannot work."""
        self.check_settings()
        kwargs = self.request_kwargs(messages, tools, response_format)
        secrets = [self.api_key.get_secret_value()] if self.api_key is not None else []
        send: Callable[[], Awaitable[Any]]
        if self.effective_lane == "openai":  # the fast lane: no litellm (_openai_lane.py)
            request = _openai_lane.build_request(kwargs)

            async def send() -> Any:
                return _openai_lane.normalise(await _openai_lane.send(request))
        else:
            litellm = load_litellm() if is_loaded() else await asyncio.to_thread(load_litellm)

            async def send() -> Any:
                return await litellm.acompletion(**kwargs)

        guard = self.timeout + _GUARD_SECONDS
        attempts = 0
        sink = current_sink()
        streaming = StreamAttempts(sink) if sink is not None else None
        stream_request = None
        if streaming is not None and self.effective_lane == "openai":
            stream_request = _openai_stream.streaming_request(_openai_lane.build_request(kwargs))

        async def call() -> Any:
            nonlocal attempts
            attempts += 1
            if streaming is not None:  # a streaming run: stream=True, text to its sink
                streaming.attempts = attempts
                if stream_request is not None:  # the openai lane (same chunks, same assembly)
                    return await _openai_stream.stream_turn(stream_request, streaming, guard)
                lite = load_litellm() if is_loaded() else await asyncio.to_thread(load_litellm)
                return await stream_turn(lite, kwargs, streaming, guard)
            if sys.version_info >= (3, 11):
                async with asyncio.timeout(guard):  # no extra task, unlike wait_for
                    return await send()
            return await asyncio.wait_for(send(), timeout=guard)

        response = await self.policy.run(
            call, label=self.model, secrets=secrets, endpoint=self.api_base
        )
        if not isinstance(response, ChatResponse):
            response = to_chat_response(response, label=self.model)
        return dataclasses.replace(response, attempts=attempts)


def _get(obj: Any, name: str) -> Any:
    """Attribute or key access: litellm objects are both, providers' extras are dicts."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return "{}"
    return json.dumps(arguments)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def to_chat_response(response: Any, *, label: str = "llm") -> ChatResponse:
    """Convert a litellm ``ModelResponse`` into our ChatResponse (tool arguments verbatim)."""
    choices = _get(response, "choices") or []
    if not choices:
        raise LLMError(f"{label}: the provider answered with no choices", attempts=1)
    choice = choices[0]
    message = _get(choice, "message")
    calls = [
        ToolCall(
            id=_get(raw, "id") or f"call_{uuid.uuid4().hex[:24]}",
            name=_get(_get(raw, "function"), "name") or "",
            arguments=_arguments_text(_get(_get(raw, "function"), "arguments")),
        )
        for raw in (_get(message, "tool_calls") or [])
    ]
    usage = _get(response, "usage")
    prompt = _count(_get(usage, "prompt_tokens"))
    completion = _count(_get(usage, "completion_tokens"))
    total = _count(_get(usage, "total_tokens")) or prompt + completion
    content = _get(message, "content")
    return ChatResponse(
        content=content if isinstance(content, str) else None,
        tool_calls=calls,
        usage=TokenUsage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total),
        finish_reason=_get(choice, "finish_reason"),
        model=_get(response, "model"),
    )


__all__ = ["LLM", "to_chat_response"]
