"""Secrets registered by value are redacted whatever their shape; short values are left alone."""

from __future__ import annotations

import pytest

from agentensemble.logging import redact, redact_text, register_secret


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
