"""Which names hold secrets: environment variables and HTTP headers worth hiding."""

from __future__ import annotations

import re

_SECRET_NAME = re.compile(
    r"(KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|SIGNATURE|DSN"
    r"|DATABASE_URL)",
    re.IGNORECASE,
)


def is_secret_name(name: str) -> bool:
    """Whether a variable or header called ``name`` likely holds a secret (``OPENAI_API_KEY``,
    ``GITHUB_TOKEN``, ``Authorization``, ``DB_PASSWORD``, ...)."""
    return bool(_SECRET_NAME.search(name))


__all__ = ["is_secret_name"]
