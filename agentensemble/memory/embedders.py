"""Embedders turn texts into vectors for semantic recall.

``LocalEmbedder`` runs a small static embedding model (WordLlama, 16 MB) whose weights ship
inside its wheel: offline, no download at run time, no key. It is the stores' default when its
extra is installed (``pip install "agentensemble-py[local-embeddings]"``); otherwise search is
lexical. ``HashingEmbedder`` needs no model and no network: it hashes words and character
trigrams into a fixed number of dimensions with a stable hash (BLAKE2), so every process, machine
and Python version gives the same vector. It finds texts sharing words or word pieces ("deploy"
and "deployment"), not synonyms. ``LiteLLMEmbedder`` calls a provider's embedding model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import re
import threading
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


#: ``AGENTENSEMBLE_EMBEDDER``: ``auto`` (the default: ``LocalEmbedder`` when installed) or
#: ``lexical`` (never an embedder unless one is passed), for a deployment or a test suite.
EMBEDDER_VARIABLE = "AGENTENSEMBLE_EMBEDDER"
_INSTALL = 'pip install "agentensemble-py[local-embeddings]"'


class LocalEmbedder:
    """WordLlama's ``l2_supercat`` model, loaded from the files its wheel ships (never from the
    network: a missing file is an error, not a download). Loaded on the first ``embed`` call,
    once per embedder, so building a store stays cheap."""

    CONFIG = "l2_supercat"

    def __init__(self, dims: int = 256) -> None:
        if dims not in (64, 128, 256):  # the wheel ships the 256-wide weights; fewer truncate
            raise ValueError(f"dims must be 64, 128 or 256; got {dims!r}")
        if importlib.util.find_spec("wordllama") is None:
            raise ImportError(f"LocalEmbedder needs the wordllama package: {_INSTALL}")
        self.dims = dims
        self._model: Any = None
        self._lock = threading.Lock()

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                from pathlib import Path

                import wordllama

                # The wheel holds the weights and tokenizer; pointing the cache at the package
                # folder finds both there (wordllama 0.4 looks for the tokenizer only in its
                # cache), and disable_download makes a missing file an error, not a request.
                folder = Path(wordllama.__file__).parent
                self._model = wordllama.WordLlama.load(
                    config=self.CONFIG,
                    cache_dir=folder,
                    disable_download=True,
                    dim=256,
                    trunc_dim=self.dims if self.dims < 256 else None,
                )
            return self._model

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._loaded().embed(list(texts), norm=True)
        return [normalised([float(x) for x in row]) for row in vectors]

    def __repr__(self) -> str:
        return f"LocalEmbedder(dims={self.dims})"


def default_embedder() -> Embedder | None:
    """The embedder a store uses when given none: ``LocalEmbedder`` when wordllama is
    installed and ``AGENTENSEMBLE_EMBEDDER`` is not ``lexical``; otherwise None (lexical)."""
    choice = os.environ.get(EMBEDDER_VARIABLE, "auto").strip().lower()
    if choice in ("lexical", "none", "off"):
        return None
    if choice not in ("", "auto", "local"):
        raise ValueError(
            f"{EMBEDDER_VARIABLE}={choice!r}: use auto (a local embedder when installed) or lexical"
        )
    if importlib.util.find_spec("wordllama") is None:
        if choice == "local":
            raise ImportError(f"{EMBEDDER_VARIABLE}=local needs the wordllama package: {_INSTALL}")
        return None
    return LocalEmbedder()


def chosen_embedder(embedder: Any) -> Any:
    """A store's ``embedder=`` argument: ``"auto"`` is ``default_embedder()``, None is lexical
    search, anything else must have ``embed(texts)``."""
    if isinstance(embedder, str) and embedder == "auto":
        return default_embedder()
    if embedder is not None and not callable(getattr(embedder, "embed", None)):
        raise ValueError(f"embedder needs an embed(texts) method; got {embedder!r}")
    return embedder


def _field(item: Any, name: str) -> Any:
    return item[name] if isinstance(item, dict) else getattr(item, name)


def embed_one(embedder: Embedder, text: str) -> list[float]:
    """One normalised vector for ``text``, with a clear error when the embedder misbehaves."""
    vectors = embedder.embed([text])
    if not isinstance(vectors, list) or len(vectors) != 1:
        raise ValueError(f"{embedder!r}.embed([text]) must return one vector")
    return normalised([float(x) for x in vectors[0]])


__all__ = [
    "EMBEDDER_VARIABLE",
    "Embedder",
    "HashingEmbedder",
    "LiteLLMEmbedder",
    "LocalEmbedder",
    "chosen_embedder",
    "default_embedder",
    "embed_one",
    "normalised",
]
