"""Embedders turn texts into vectors for semantic recall; none is ever used by default.

``HashingEmbedder`` needs no model and no network: it hashes words and character trigrams into
a fixed number of dimensions with a stable hash (BLAKE2), so every process, machine and Python
version gives the same vector. It finds texts sharing words or word pieces ("deploy" and
"deployment"), not synonyms; use ``LiteLLMEmbedder`` for that.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from agentensemble.memory._query import STOPWORDS

_WORD = re.compile(r"\w+", re.UNICODE)


@runtime_checkable
class Embedder(Protocol):
    """Anything with ``embed(texts) -> one vector per text`` (all of one length)."""

    def embed(self, texts: list[str]) -> list[list[float]]: ...


def normalised(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to length 1 (a zero vector stays zero)."""
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 else [0.0 for _ in vector]


class HashingEmbedder:
    """Deterministic vectors from hashed words and character trigrams (no model, no network)."""

    def __init__(self, dims: int = 256) -> None:
        if isinstance(dims, bool) or not isinstance(dims, int) or dims < 8:
            raise ValueError(f"dims must be an integer of at least 8; got {dims!r}")
        self.dims = dims
        self._cache: dict[str, tuple[int, float]] = {}

    def _slot(self, feature: str) -> tuple[int, float]:
        known = self._cache.get(feature)
        if known is None:
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            number = int.from_bytes(digest, "big")
            known = (number % self.dims, 1.0 if (number >> 63) & 1 else -1.0)
            if len(self._cache) < 200_000:
                self._cache[feature] = known
        return known

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> list[float]:
        vector = [0.0] * self.dims
        words = _WORD.findall(text.lower())
        for word in [w for w in words if w not in STOPWORDS] or words:
            index, sign = self._slot("w:" + word)
            vector[index] += sign * 2.0
            padded = f"<{word}>"
            for start in range(len(padded) - 2):
                index, sign = self._slot("c:" + padded[start : start + 3])
                vector[index] += sign
        return normalised(vector)

    def __repr__(self) -> str:
        return f"HashingEmbedder(dims={self.dims})"


class LiteLLMEmbedder:
    """A provider's embedding model through litellm (``"openai/text-embedding-3-small"``...).

    litellm is imported on the first ``embed`` call. Keyword arguments go to
    ``litellm.embedding`` (``api_base``, ``api_key``, ``dimensions``...); the key is never
    stored in memory entries or shown in ``repr``.
    """

    def __init__(self, model: str, **litellm_kwargs: Any) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(
                "LiteLLMEmbedder needs a model name, e.g. 'openai/text-embedding-3-small'"
            )
        self.model = model
        self._kwargs = litellm_kwargs

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        from agentensemble.llm._litellm import load_litellm

        litellm = load_litellm()
        response = litellm.embedding(model=self.model, input=list(texts), **self._kwargs)
        data = sorted(response.data, key=lambda item: _field(item, "index"))
        return [normalised([float(x) for x in _field(item, "embedding")]) for item in data]

    def __repr__(self) -> str:
        return f"LiteLLMEmbedder(model={self.model!r})"


def _field(item: Any, name: str) -> Any:
    return item[name] if isinstance(item, dict) else getattr(item, name)


def embed_one(embedder: Embedder, text: str) -> list[float]:
    """One normalised vector for ``text``, with a clear error when the embedder misbehaves."""
    vectors = embedder.embed([text])
    if not isinstance(vectors, list) or len(vectors) != 1:
        raise ValueError(f"{embedder!r}.embed([text]) must return one vector")
    return normalised([float(x) for x in vectors[0]])


__all__ = ["Embedder", "HashingEmbedder", "LiteLLMEmbedder", "embed_one", "normalised"]
