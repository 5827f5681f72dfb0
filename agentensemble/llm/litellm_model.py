"""``LLM``: the ChatModel that reaches any provider through litellm, with our retry policy."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    field_serializer,
    field_validator,
    model_validator,
)

from agentensemble._base.timeouts import within
from agentensemble.errors import ConfigurationError, LLMError, ModelSettingsError
from agentensemble.llm import _model_table, _openai_client
from agentensemble.llm._chain import complete_down, provider_unavailable
from agentensemble.llm._config_checks import api_base_problem, check_model_settings, provider_of
from agentensemble.llm._failures import malformed_tool_call
from agentensemble.llm._litellm import is_loaded, load_litellm, takes_input
from agentensemble.llm._litellm_stream import StreamAttempts, stream_turn
from agentensemble.llm._messages import (
    holds_bytes,
    input_kinds,
    outgoing,
    outgoing_tools,
    read_response,
)
from agentensemble.llm._openai_client import Lane, LaneSetting, choose_lane
from agentensemble.llm._secrets import masked, register_setting_secrets
from agentensemble.llm._sendable import sendable
from agentensemble.llm.rate_limit import RateLimit, rate_limited
from agentensemble.llm.response_format import ResponseFormat, litellm_supports_schema
from agentensemble.llm.retry import RetryPolicy
from agentensemble.llm.streaming import current_sink
from agentensemble.llm.types import ChatResponse, Message, ToolSpec
from agentensemble.redaction import register_secret

#: Extra seconds past ``timeout`` before our own guard cancels a call litellm did not time out.
_GUARD_SECONDS = 5.0
#: How many times one call tells the model its tool call was malformed and asks again.
MAX_TOOL_CORRECTIONS = 2
TOOL_CORRECTION = (
    "The provider rejected your last tool call: {words}\n"
    "Call the tool again with arguments that match its schema."
)


ReasoningEffort = Literal["low", "medium", "high"]

#: How an error names each kind of part a model may not take.
_PART_NAMES = {"image": "image parts", "pdf": "PDF document parts", "audio": "audio parts"}


class LLM(BaseModel):
    """A chat model reached through litellm: ``LLM("openai/gpt-4o-mini")``.

    ``model`` is a litellm model string (``provider/name``). ``api_base`` points at any
    OpenAI-compatible server. Transient failures are retried by ``retry_policy`` (default:
    ``max_retries`` retries after the first attempt); the openai SDK's own retries are off.
    Other keyword arguments are passed to ``litellm.acompletion`` as they are.
    ``api_key`` is a SecretStr: it never shows in repr, str or errors.
    ``reasoning_effort`` asks a reasoning model to think less or more (litellm maps it to each
    provider's setting: OpenAI's ``reasoning_effort``, Anthropic's and Gemini's thinking
    budgets). ``prompt_cache`` marks the stable prefix (system text, tool specs) for providers
    that cache only at breakpoints (Anthropic ``cache_control``); OpenAI-style automatic caching
    is left alone.
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
    reasoning_effort: ReasoningEffort | None = None
    prompt_cache: bool = True
    extra: dict[str, Any] = Field(default_factory=dict, repr=False)
    fallbacks: list[LLM] = Field(
        default_factory=list, repr=False, description="models for a turn it cannot answer"
    )
    _settings_checked: bool = PrivateAttr(default=False)
    _chain: Any = PrivateAttr(default=None)  # fallback_chain(), made once

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
        reasoning_effort: ReasoningEffort | None = None,
        prompt_cache: bool = True,
        fallbacks: Sequence[str | LLM] = (),
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
            reasoning_effort=reasoning_effort,
            prompt_cache=prompt_cache,
            extra=extra,
            fallbacks=fallbacks,
        )

    @field_validator("api_base")
    @classmethod
    def _api_base_has_scheme(cls, value: str | None) -> str | None:
        problem = api_base_problem(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("fallbacks", mode="before")
    @classmethod
    def _fallback_models(cls, value: Any) -> Any:
        return fallback_models(value)

    @model_validator(mode="after")
    def _not_its_own_fallback(self) -> LLM:
        own = self.model_dump(exclude={"fallbacks"})
        for position, model in enumerate(self.fallbacks):
            if model.model_dump(exclude={"fallbacks"}) == own:
                raise ValueError(
                    f"fallbacks[{position}] is this model itself ({self.model!r}, same settings)"
                )
        return self

    def fallback_chain(self) -> list[tuple[str, LLM]]:
        """``(name, model)`` for this model (its own settings, no fallbacks) and each fallback."""
        chain: list[tuple[str, LLM]] | None = self._chain
        if chain is None:
            first = self.model_copy(update={"fallbacks": [], "rate_limit": None})  # waited here
            chain = [(self.model, first), *((m.model, m) for m in self.fallbacks)]
            self._chain = chain
        return chain

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
        URL without a scheme), naming the variable or setting. Done before a run's first call,
        for each of ``fallbacks`` too (named by position): a chain fails before the run, not
        when the turn reaches the member that cannot work."""
        if self._settings_checked:
            return
        check_model_settings(
            self.model,
            has_key=self.api_key is not None,
            extra=self.extra,
            api_base=self.api_base,
        )
        for position, fallback in enumerate(self.fallbacks):
            try:
                fallback.check_settings()
            except ModelSettingsError as error:
                raise ModelSettingsError(
                    f"fallbacks[{position}] ({fallback.model!r}): {error}",
                    missing_key=error.missing_key,
                ) from None
        self._settings_checked = True

    @property
    def effective_lane(self) -> Lane:
        """The lane calls take now: ``"openai"`` (the ``openai`` package, straight to an
        OpenAI-compatible endpoint, litellm not imported) or ``"litellm"``. See
        ``_openai_client.choose_lane`` for the rule."""
        return choose_lane(
            self.model,
            self.extra,
            self.lane,
            has_key=self.api_key is not None or bool(self.extra.get("api_key")),
            api_base=self.api_base,
        )

    @property
    def provider(self) -> str:
        """The litellm provider calls go to (``openai`` for a bare OpenAI name)."""
        return provider_of(self.model) or "openai"

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
        provider, cache = self.provider, self.prompt_cache
        kwargs.update(
            model=self.model,
            messages=sendable(outgoing(messages, provider, prompt_cache=cache)),
            timeout=self.timeout,
            max_retries=0,  # the openai SDK retries twice by default; ours is the only layer
        )
        if tools:
            kwargs["tools"] = sendable(outgoing_tools(tools, provider, prompt_cache=cache))
            # said explicitly: some OpenAI-compatible servers ignore tools without it
            kwargs.setdefault("tool_choice", "auto")
        if response_format is not None:
            kwargs["response_format"] = response_format.to_openai()
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        if self.reasoning_effort is not None:
            kwargs["reasoning_effort"] = self.reasoning_effort
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key.get_secret_value()
        kwargs.pop("num_retries", None)  # litellm's own retry layer stays off
        return kwargs

    async def _request_kwargs(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] | None,
        response_format: ResponseFormat | None,
    ) -> dict[str, Any]:
        """``request_kwargs``, built in a worker thread when attachments hold bytes: reading
        bytes a durable checkpoint kept (a database query) and base64-encoding up to 20 MiB
        each, every turn, would block every other run on the event loop. Without any, built
        here (no thread hop for the common request)."""
        if not holds_bytes(messages):
            return self.request_kwargs(messages, tools, response_format)
        from agentensemble._base.threads import daemon_pool  # first needed here

        # the daemon pool, not to_thread: a kept-bytes source may block on its database, and
        # nobody should wait for it at exit; the caller's context variables go along
        built = daemon_pool().submit(self.request_kwargs, messages, tools, response_format)
        return await asyncio.wrap_future(built)

    async def supports_response_format(self) -> bool:
        """Whether litellm knows this model takes a JSON-schema ``response_format``."""
        if self.effective_lane == "openai":  # litellm's own table, read without importing it
            return await asyncio.to_thread(_model_table.supports_response_schema, self.model)
        litellm = load_litellm() if is_loaded() else await asyncio.to_thread(load_litellm)
        return litellm_supports_schema(litellm, self.model)

    async def check_inputs(self, messages: Sequence[Message]) -> None:
        """Refuse, before any request, attachments this model cannot take (litellm's model
        table: ``supports_vision``, ``supports_pdf_input``, ``supports_audio_input``), naming
        the model and the part. A model the table does not know is let through."""
        kinds = input_kinds(messages)
        if not kinds:
            return
        for kind, label in kinds.items():
            if is_loaded():
                takes = takes_input(self.model, kind)
            else:  # litellm's first import takes seconds: not on the event loop
                takes = await asyncio.to_thread(takes_input, self.model, kind)
            if not takes:
                raise ConfigurationError(
                    f"model {self.model!r} cannot take {_PART_NAMES[kind]} (litellm's model "
                    f"table says so), but the request holds {label!r}; use a model that does, "
                    f"or leave the attachment out"
                )

    @rate_limited  # waits for ``rate_limit``'s bucket first, whichever lane the call takes
    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: ResponseFormat | None = None,
    ) -> ChatResponse:
        """One model turn; ``LLMError`` once the provider fails for good, ``ConfigurationError``
        (before any request) for settings that cannot work.

        When the provider rejects the model's own tool call as malformed (Groq's
        ``tool_use_failed``), the model is told what was wrong and asked again, at most
        ``MAX_TOOL_CORRECTIONS`` times; the correction is not kept in the caller's history.
        With ``fallbacks``, the next model answers a turn this one cannot (llm/_chain.py)."""
        if self.fallbacks:
            options = {} if response_format is None else {"response_format": response_format}
            return await complete_down(
                self.fallback_chain(), messages, tools, options, provider_unavailable
            )
        self.check_settings()
        await self.check_inputs(messages)
        sent = list(messages)
        for corrections in range(MAX_TOOL_CORRECTIONS + 1):
            try:
                return await self._complete_once(sent, tools, response_format)
            except LLMError as error:
                words = malformed_tool_call(error)
                if words is None or corrections == MAX_TOOL_CORRECTIONS:
                    raise
                sent = [*sent, {"role": "user", "content": TOOL_CORRECTION.format(words=words)}]
        raise AssertionError("unreachable: the last correction returns or raises")

    async def _complete_once(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] | None,
        response_format: ResponseFormat | None,
    ) -> ChatResponse:
        kwargs = await self._request_kwargs(messages, tools, response_format)
        secrets = [self.api_key.get_secret_value()] if self.api_key is not None else []
        send: Callable[[], Awaitable[Any]]
        sink = current_sink()
        streaming = StreamAttempts(sink) if sink is not None else None
        openai_request = None
        if self.effective_lane == "openai":  # the openai package (llm/_openai_client.py)
            openai_request = _openai_client.build_request(kwargs)
            if streaming is not None:
                openai_request = openai_request.streaming()
            request, provider, model = openai_request, self.provider, self.model

            async def send() -> Any:
                return await _openai_client.complete(request, provider=provider, label=model)
        else:
            litellm = load_litellm() if is_loaded() else await asyncio.to_thread(load_litellm)

            async def send() -> Any:
                return await litellm.acompletion(**kwargs)

        guard = self.timeout + _GUARD_SECONDS
        attempts = 0

        async def call() -> Any:
            nonlocal attempts
            attempts += 1
            if streaming is not None:  # a streaming run: stream=True, text to its sink
                streaming.attempts = attempts
                if openai_request is not None:  # the openai lane (same chunks, same assembly)
                    return await _openai_client.stream_turn(
                        openai_request, streaming, guard, self.provider
                    )
                lite = load_litellm() if is_loaded() else await asyncio.to_thread(load_litellm)
                return await stream_turn(lite, kwargs, streaming, guard, self.provider)
            return await within(send(), guard)

        response = await self.policy.run(
            call, label=self.model, secrets=secrets, endpoint=self.api_base
        )
        if not isinstance(response, ChatResponse):
            response = to_chat_response(response, label=self.model, provider=self.provider)
        return dataclasses.replace(response, attempts=attempts)


def fallback_models(value: Any) -> Any:
    """``LLM(fallbacks=...)`` as LLMs: names become LLMs; anything else is refused, by position."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"fallbacks must be a list of model names or LLMs; got {value!r}")
    models: list[Any] = []
    for position, entry in enumerate(value):
        if isinstance(entry, str) and entry.strip():
            entry = LLM(entry)
        if not isinstance(entry, LLM):
            raise ValueError(
                f"fallbacks[{position}] must be a model name or an LLM; got {type(entry).__name__}"
            )
        if entry.fallbacks:
            raise ValueError(
                f"fallbacks[{position}] has fallbacks of its own; list every model in one chain"
            )
        if entry in models:
            raise ValueError(f"fallbacks[{position}] repeats {entry.model!r}")
        models.append(entry)
    return models


def to_chat_response(
    response: Any, *, label: str = "llm", provider: str = "openai"
) -> ChatResponse:
    """Convert a litellm ``ModelResponse`` into our ChatResponse (tool arguments verbatim;
    reasoning, refusal, usage details and the parts ``provider`` needs back kept)."""
    return read_response(response, provider=provider, label=label)


__all__ = ["LLM", "to_chat_response"]
