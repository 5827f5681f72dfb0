"""Secrets in a model's extra settings: found by key name, registered by value, masked in dumps.

``LLM(..., extra_headers={"Ocp-Apim-Subscription-Key": ...}, vertex_credentials=...)`` passes
credentials the generic key-name redaction does not recognise (``Cookie``, ``*-Key``,
``*_credentials``). Every value under a secret-looking name is registered with
``agentensemble.logging.register_secret``, so it is hidden wherever it shows up (a provider
echoing it, a traceback, a log line), and ``LLM.model_dump()`` shows it as ``***``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from agentensemble.redaction import (
    MIN_SECRET_LENGTH,
    REDACTED,
    is_secret_name,
    redact,
    register_secret,
)

_SCHEMES = ("bearer", "basic", "token", "key")
_MIN_LENGTH = MIN_SECRET_LENGTH


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
        scheme, _, credential = value.strip().partition(" ")
        if credential.strip() and scheme.lower() in _SCHEMES:  # "Bearer abc": the token alone
            yield credential.strip()  # may be echoed too
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)


def secret_values(settings: Mapping[str, Any]) -> list[str]:
    """Every string held under a secret-looking name, at any depth (e.g. inside headers)."""
    found: list[str] = []
    for key, value in settings.items():
        if is_secret_name(str(key)):
            found += [leaf for leaf in _leaves(value) if len(leaf) >= _MIN_LENGTH]
        elif isinstance(value, Mapping):
            found += secret_values(value)
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, Mapping):
                    found += secret_values(item)
    return found


def register_setting_secrets(settings: Mapping[str, Any]) -> None:
    """Register every credential in ``settings`` by value."""
    for value in secret_values(settings):
        register_secret(value)


def masked(settings: Any) -> Any:
    """``settings`` for showing: values under secret-looking names become ``***``, the rest is
    redacted by shape and by registered value."""
    if isinstance(settings, Mapping):
        return {
            key: (REDACTED if value not in (None, "") else value)
            if is_secret_name(str(key))
            else masked(value)
            for key, value in settings.items()
        }
    if isinstance(settings, (list, tuple)):
        return type(settings)(masked(item) for item in settings)
    return redact(settings)


__all__ = ["masked", "register_setting_secrets", "secret_values"]
