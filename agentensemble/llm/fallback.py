"""``FallbackModel``: a chain of chat models; when one fails the way the chain names (by
default: throttled after its retries, an outage, a timeout, a dropped connection), the next one
answers the same turn.

A ChatModel around ChatModels, not a branch in the executor: a durable run checkpoints the
turn as one step, so the answer a resumed run uses is the one that was recorded, whichever
model gave it. Each model keeps its own settings (``max_tokens``, ``api_base``, retries).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentensemble._base.validation import refuse_class
from agentensemble.errors import ModelSettingsError
from agentensemble.llm._chain import FallbackRule, check_rule, complete_down, provider_unavailable
from agentensemble.llm.litellm_model import LLM
from agentensemble.llm.response_format import supports_response_format
from agentensemble.llm.types import ChatModel, ChatResponse, Message, ToolSpec, model_label


def chain_entry(entry: Any, field: str, position: int) -> ChatModel:
    """One model of a chain: a model name becomes an ``LLM``; anything that is no ChatModel is
    refused, naming ``field`` and the position."""
    refuse_class(entry, f"{field}[{position}]")
    if isinstance(entry, str):
        if not entry.strip():
            raise ValueError(f"{field}[{position}] is blank; give a model name")
        return LLM(entry)
    complete = getattr(entry, "complete", None)
    if not callable(complete):
        raise ValueError(
            f"{field}[{position}] must be a model name, an LLM or a ChatModel with an async "
            f"complete(); got {type(entry).__name__}"
        )
    model: ChatModel = entry
    return model


def _flat(model: ChatModel) -> list[ChatModel]:
    """The models a chain entry stands for (a FallbackModel inside one: its own models)."""
    if isinstance(model, FallbackModel):
        return list(model.models)
    if isinstance(model, LLM) and model.fallbacks:
        return [m for _, m in model.fallback_chain()]
    return [model]


def check_chain(models: Sequence[ChatModel], field: str) -> None:
    """Refuse a chain naming one model twice (itself included): the second would fail the
    same way, so the chain would only wait twice as long."""
    seen: list[ChatModel] = []
    for position, model in enumerate(models):
        for part in _flat(model):
            twin = next((s for s in seen if s is part or _same(s, part)), None)
            if twin is not None:
                raise ValueError(
                    f"{field}[{position}] repeats {model_label(part)!r}, already in the chain; "
                    "a fallback must be another model or other settings"
                )
            seen.append(part)


def _same(one: ChatModel, other: ChatModel) -> bool:
    return isinstance(one, LLM) and isinstance(other, LLM) and one == other


class FallbackModel:
    """``FallbackModel(["openai/gpt-4o-mini", LLM("anthropic/claude-3-5-haiku-latest")])``.

    ``fallback_on``: a tuple of exception classes, or a function ``(error) -> bool``; by default
    ``provider_unavailable`` (a bad request or a refusal never falls back). Which model answered
    is the answer's ``ChatResponse.model``; it is what events, the trace, ``TaskOutput.model``
    and the cost show. When every model fails, ``AllModelsFailedError`` lists each failure.
    """

    def __init__(
        self,
        models: Sequence[str | LLM | ChatModel],
        *,
        fallback_on: FallbackRule = provider_unavailable,
    ) -> None:
        if isinstance(models, (str, bytes)) or not isinstance(models, Sequence):
            raise ValueError(
                f"FallbackModel models must be a list of models; got {type(models).__name__}"
            )
        if not models:
            raise ValueError("FallbackModel models is empty; give at least one model")
        field = "FallbackModel models"
        chain = [chain_entry(entry, field, i) for i, entry in enumerate(models)]
        check_chain(chain, field)
        self.models: tuple[ChatModel, ...] = tuple(m for entry in chain for m in _flat(entry))
        self.fallback_on = check_rule(fallback_on, "fallback_on")
        self._chain = tuple((model_label(m), m) for m in self.models)

    @property
    def model(self) -> str:
        """The chain's name for logs and ``LLMCallStarted``: its models' names, in order."""
        return " > ".join(name for name, _ in self._chain)

    @property
    def fallbacks(self) -> tuple[ChatModel, ...]:
        """The models after the first (as ``LLM.fallbacks``)."""
        return self.models[1:]

    def fallback_chain(self) -> list[tuple[str, ChatModel]]:
        """``(name, model)`` for each model, in chain order (as ``LLM.fallback_chain``)."""
        return list(self._chain)

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        **options: Any,
    ) -> ChatResponse:
        """The first answer down the chain (see ``_chain.complete_down``)."""
        return await complete_down(self._chain, messages, tools, options, self.fallback_on)

    async def supports_response_format(self) -> bool:
        """Native structured output only when every model of the chain takes it: the turn's
        request must suit whichever model answers."""
        for model in self.models:
            if not await supports_response_format(model):
                return False
        return True

    def check_settings(self) -> None:
        """Each LLM's settings (a missing key, a bad base URL, an unknown provider), before a
        run's first call; ``ModelSettingsError`` names the member that cannot work."""
        for position, model in enumerate(self.models):
            if not isinstance(model, LLM):
                continue
            try:
                model.check_settings()
            except ModelSettingsError as error:
                raise ModelSettingsError(
                    f"FallbackModel models[{position}] ({model.model!r}): {error}",
                    missing_key=error.missing_key,
                ) from None

    def __repr__(self) -> str:
        return f"FallbackModel({list(self.models)!r})"


def chain_models(model: object) -> list[object]:
    """The models a model stands for (each of a chain's; else itself), for price checks."""
    if isinstance(model, (FallbackModel, LLM)):
        return list(_flat(model))
    return [model]


__all__ = ["FallbackModel", "chain_entry", "chain_models", "check_chain"]
