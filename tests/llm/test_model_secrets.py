"""Secrets in a model's settings are known by value: masked in dumps, hidden when echoed."""

from __future__ import annotations

import json

import pytest

from agentensemble import LLM
from agentensemble.llm._secrets import masked, secret_values
from agentensemble.llm.retry import redact_secrets
from agentensemble.logging import redact_text

SUBSCRIPTION = "apim-4b8d2f6a0c1e3g5h7j9k"
COOKIE = "session=c0ok1e-7f3a9b1d5e2c8a4f"
VERTEX = '{"type": "service_account", "private_key": "-----BEGIN KEY-----MIIEv9x2Q"}'
TOKEN = "tok-6d2e9a1b7c4f8e3a"


def make() -> LLM:
    return LLM(
        "azure/deployment",
        api_base="https://example.openai.azure.com",
        extra_headers={"Ocp-Apim-Subscription-Key": SUBSCRIPTION, "Cookie": COOKIE},
        vertex_credentials=VERTEX,
        metadata={"auth": {"access_token": TOKEN}, "team": "research"},
        max_tokens=100,
    )


def test_model_dump_masks_headers_and_credentials_by_name() -> None:
    llm = make()
    for dumped in (json.dumps(llm.model_dump()), llm.model_dump_json(), repr(llm), str(llm)):
        for secret in (SUBSCRIPTION, COOKIE, "MIIEv9x2Q", TOKEN):
            assert secret not in dumped
    extra = llm.model_dump()["extra"]
    assert extra["extra_headers"] == {"Ocp-Apim-Subscription-Key": "***", "Cookie": "***"}
    assert extra["vertex_credentials"] == "***"
    assert extra["metadata"] == {"auth": "***", "team": "research"}
    assert llm.max_tokens == 100  # a count, not a secret
    assert llm.extra["extra_headers"]["Cookie"] == COOKIE  # the call still gets the real value


def test_secret_values_are_registered_so_an_echo_is_redacted_anywhere() -> None:
    make()
    echo = f"upstream said: bad subscription {SUBSCRIPTION}; cookie {COOKIE}; token {TOKEN}"
    for redacted in (redact_text(echo), redact_secrets(echo)):
        assert SUBSCRIPTION not in redacted and COOKIE not in redacted and TOKEN not in redacted
        assert "upstream said: bad subscription ***" in redacted


@pytest.mark.parametrize(
    ("settings", "found"),
    [
        ({"extra_headers": {"X-Api-Key": "k" * 10}}, ["k" * 10]),
        (
            {"headers": {"Authorization": "Bearer abcdefgh123"}},
            ["Bearer abcdefgh123", "abcdefgh123"],
        ),
        ({"max_tokens": 500, "top_p": 0.9, "user": "alice-123"}, []),
        ({"keep_alive": "5m", "response_format": {"type": "json_object"}}, []),
        ({"aws_secret_access_key": "wJalrXUtnFEMI"}, ["wJalrXUtnFEMI"]),
        ({"password": "short"}, []),  # too short to redact safely; still masked in dumps
    ],
)
def test_secret_values_by_name(settings: dict[str, object], found: list[str]) -> None:
    assert secret_values(settings) == found


def test_masked_keeps_counts_and_ordinary_settings() -> None:
    settings = {"max_tokens": 5, "seed": 7, "password": "short", "api_key": None}
    assert masked(settings) == {"max_tokens": 5, "seed": 7, "password": "***", "api_key": None}
