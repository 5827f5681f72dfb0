"""Secrets registered by value are redacted whatever their shape; short values are left alone."""

from __future__ import annotations

import pytest

from agentensemble.logging import redact, redact_text, register_secret
from agentensemble.redaction import register_url_secrets


@pytest.mark.parametrize(
    ("secret", "text", "expected"),
    [
        ("Zq8-not-a-known-shape", "echo: Zq8-not-a-known-shape.", "echo: ***."),
        (
            "ocp-subscription-4711",
            "{'Ocp-Apim-Subscription-Key': 'ocp-subscription-4711'}",
            "{'Ocp-Apim-Subscription-Key': '***'}",
        ),
        ("abc", "abc stays: too short to redact safely", "abc stays: too short to redact safely"),
    ],
)
def test_a_registered_value_is_redacted_in_free_text(secret: str, text: str, expected: str) -> None:
    register_secret(secret)
    assert redact_text(text) == expected


def test_a_registered_value_is_redacted_inside_nested_values() -> None:
    register_secret("cookie-value-98765")
    dumped = redact(
        {"headers": {"Cookie": "session=cookie-value-98765"}, "list": ["cookie-value-98765"]}
    )
    assert "cookie-value-98765" not in repr(dumped)


def test_a_text_seen_clean_is_redacted_once_a_secret_in_it_is_registered() -> None:
    # redact_text remembers texts it found clean (a run redacts the same prompts every turn):
    # a secret learnt afterwards must still be hidden in them, on every path that remembers
    text = "the deploy key is kq7-learnt-later-3141"
    assert redact_text(text) == text
    assert redact_text(text) == text  # now answered from what was seen clean
    register_secret("kq7-learnt-later-3141")
    assert redact_text(text) == "the deploy key is ***"
    assert redact({"note": text}) == {"note": "the deploy key is ***"}


def test_a_text_seen_clean_is_redacted_once_a_credential_url_in_it_is_registered() -> None:
    text = "fetching https://hooks.example.com/services/T0/B0/plainpathsecret then retrying"
    assert redact_text(text) == text
    register_url_secrets("https://hooks.example.com/services/T0/B0/plainpathsecret")
    assert "plainpathsecret" not in redact_text(text)


def test_extra_secrets_are_applied_to_a_text_seen_clean() -> None:
    text = "extra-only-secret-2718 in a line"
    assert redact_text(text) == text
    assert redact_text(text, ["extra-only-secret-2718"]) == "*** in a line"
    assert redact_text(text) == text  # the extra secret is not the policy's
