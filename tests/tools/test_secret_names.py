"""Which variable and header names count as holding secrets (scrubbed, or registered)."""

from __future__ import annotations

import pytest

from agentensemble.logging import redact_text
from agentensemble.mcp import MCPServerHTTP, MCPServerStdio
from agentensemble.redaction import is_secret_name


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("GITHUB_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("DB_PASSWORD", True),
        ("Authorization", True),
        ("Cookie", True),
        ("SENTRY_DSN", True),
        ("DATABASE_URL", True),
        ("PATH", False),
        ("HOME", False),
        ("NODE_ENV", False),
        ("LANG", False),
        ("X-Request-Id", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_every_env_value_and_every_credential_header_of_an_mcp_server_is_a_secret() -> None:
    MCPServerStdio(
        "srv", env={"SERVICE_TOKEN": "tok-registered-by-mcp-env", "MODE": "plain-mode-value"}
    )
    MCPServerHTTP(
        "http://127.0.0.1:9/mcp",
        headers={"X-Trace": "plain-trace-value", "Accept": "application/json"},
    )
    assert redact_text("tok-registered-by-mcp-env plain-mode-value") == "*** ***"
    assert redact_text("plain-trace-value") == "***"
    assert redact_text("application/json") == "application/json"  # a plain header's value
