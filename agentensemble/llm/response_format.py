"""Native structured output: the ``response_format`` a model may be asked to honour.

A ChatModel that can constrain its answer to a JSON schema says so with
``supports_response_format()`` (sync or async) and accepts ``complete(..., response_format=...)``.
Models without that method get the schema in the prompt instead; the executor decides per task
by asking the model at call time, so litellm is consulted only by an ``LLM`` about to call it.
"""

from __future__ import annotations

import inspect
import re
import threading
from typing import Any

from agentensemble._base.dataclass import dataclass

_NAME = re.compile(r"[^A-Za-z0-9_-]+")
_support_lock = threading.Lock()
_support: dict[str, bool] = {}


@dataclass(frozen=True)
class ResponseFormat:
    """A JSON schema the model's final answer must match (OpenAI ``json_schema`` shape)."""

    name: str
    schema: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        """The ``response_format`` request parameter; litellm translates it for other providers."""
        name = _NAME.sub("_", self.name).strip("_")[:64] or "output"
        return {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": self.schema, "strict": False},
        }


async def supports_response_format(model: object) -> bool:
    """Whether ``model`` says it honours ``response_format`` (False when it does not say)."""
    probe = getattr(model, "supports_response_format", None)
    if not callable(probe):
        return False
    answer = probe()
    if inspect.isawaitable(answer):
        answer = await answer
    return answer is True


def litellm_supports_schema(litellm: Any, model: str) -> bool:
    """litellm's own table: does ``model`` take a JSON-schema ``response_format``? Cached."""
    with _support_lock:
        known = _support.get(model)
    if known is not None:
        return known
    try:
        supported = bool(litellm.supports_response_schema(model=model))
    except Exception:  # an unknown model or provider: fall back to prompt instructions
        supported = False
    with _support_lock:
        _support[model] = supported
    return supported


__all__ = ["ResponseFormat", "litellm_supports_schema", "supports_response_format"]
