"""What a credential looks like: the rules the outward-redaction policy applies, stateless.

- by its shape in a text: key-shaped strings (``sk-...``, ``AIza...``, ``ghp_...``, ``xoxb-...``,
  ``AKIA...``), ``Bearer``/``Basic`` credentials, ``api_key=...``-style assignments, the
  password of ``scheme://user:pw@host``, token-named query parameters (``redact_shapes``);
- by the name it travels under: a variable, header, setting or field (``is_secret_name``), and
  the headers that never carry one (``PLAIN_HEADERS``);
- in a URL: which path segments are tokens (``looks_like_token``), how a URL is shown without
  them (``safe_url``), and where URLs sit in a text (``urls_in``).

The secrets registered by value, the caches and every way in (``redact_text``, ``redact``,
``register_*``) are the policy's own: ``agentensemble.redaction``, which re-exports the public
names here. Use them from there. Stdlib only, and every pattern is compiled on first use.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any


class _OnFirstUse:
    """A pattern compiled on first use, after which the module's name for it is the compiled
    pattern itself (functions read the module global, so later calls pay nothing). Compiling the
    policy's patterns cost about 5 ms of a script's first line (issue 27); the first redaction
    pays it now."""

    __slots__ = ("_flags", "_name", "_source")

    def __init__(self, name: str, source: str, flags: int) -> None:
        self._name, self._source, self._flags = name, source, flags

    def __getattr__(self, attribute: str) -> Any:
        compiled = re.compile(self._source, self._flags)
        if globals().get(self._name) is self:
            globals()[self._name] = compiled
        return getattr(compiled, attribute)


def _on_first_use(name: str, source: str, flags: int = 0) -> Any:
    return _OnFirstUse(name, source, flags)


REDACTED = "***"

SECRET_NAME: re.Pattern[str] = _on_first_use(
    "SECRET_NAME",
    r"(?<![a-z])(?:api[_-]?)?key(?![a-z])|cookie|credential|secret|passw|passphrase|signature|"
    r"session|private|auth|token(?!s)|bearer|(?<![a-z])dsn(?![a-z])|database_ur[li]",
    re.IGNORECASE,
)
"""Names (environment variables, headers, settings, log fields) whose values are credentials.
``max_tokens`` and other ``*tokens`` are counts, ``KEYBOARD`` is not a key."""

_NOT_SECRET_NAMES = frozenset(
    {"prompt_tokens", "completion_tokens", "total_tokens", "max_tokens", "session_id"}
)

_SHAPE_SOURCES: tuple[tuple[str, str], ...] = (
    # scheme://user:password@host -> scheme://user:***@host (database, broker, proxy URLs); the
    # password runs to the last "@" before the host (it may hold an unescaped "@"). Anchored on
    # the literal "://", the password's class excluding "/" (so a scan ends at the next "://"):
    # linear on any text
    (r"(://[^\s/?#@:\"'<>]*:)[^\s/?#\"'<>]+(@)", r"\1***\2"),
    # Authorization credentials: "Bearer <token>", "Basic <base64>"
    (r"\b((?i:bearer|basic)\s+)[A-Za-z0-9._\-~+/=]{6,}", r"\1***"),
    # provider key shapes
    (r"\bsk-[A-Za-z0-9_\-]{6,}", REDACTED),
    (r"\bAIza[0-9A-Za-z_\-]{20,}", REDACTED),
    (r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})", REDACTED),
    (r"\bxox[abprs]-[A-Za-z0-9\-]{10,}", REDACTED),
    (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", REDACTED),
    # api_key=..., "authorization": "...", access_token: ..., password=...
    (
        (
            r"((?i:api[_-]?key|x-api-key|authorization|access[_-]?token|refresh[_-]?token|"
            r"client[_-]?secret|secret|password|passwd)[\"']?\s*[:=]\s*[\"']?)"
            r"(?!\*\*\*|\.\.\.|(?i:bearer|basic)\s)[^\s\"',;}&]{4,}"  # "..." is a placeholder
        ),
        r"\1***",
    ),
    # token-named query parameters (``?token=``, ``&X-Amz-Signature=``): see _query_value
)
"""The credential shapes: (pattern, replacement), compiled on first use into ``_SHAPES``."""
_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = ()


def _shapes() -> tuple[tuple[re.Pattern[str], str], ...]:
    """``_SHAPES``, compiled on the first redaction (see ``_OnFirstUse``)."""
    global _SHAPES
    if not _SHAPES:
        _SHAPES = tuple((re.compile(source), replacement) for source, replacement in _SHAPE_SOURCES)
    return _SHAPES


_NEEDED: tuple[tuple[str, ...], ...] = (
    ("://",),
    ("bearer", "basic"),
    ("sk-",),
    ("aiza",),
    ("gh", "github_pat_"),
    ("xox",),
    ("akia", "asia"),
    ("api", "authorization", "access", "refresh", "client", "secret", "passw"),
)
"""For each rule of ``_SHAPES`` in order, literals (lower case) of which an ASCII text must hold
one for the rule to match: a text holding none skips that rule's scan, with the same result.
Redaction of a long prompt (a task with many context outputs) was mostly these scans."""

_QUERY_PARAMETER: re.Pattern[str] = _on_first_use(
    "_QUERY_PARAMETER", r"([?&])([\w.\-]{1,64})=(?!\*\*\*)([^&\s#\"'<>]+)"
)
_QUERY_SECRET: re.Pattern[str] = _on_first_use(
    "_QUERY_SECRET", r"token|key|secret|sig|password|auth|code", re.IGNORECASE
)


def _query_value(match: re.Match[str]) -> str:
    """A query parameter, its value hidden when its name says it is a credential (the name is
    bounded in length, so the scan stays linear)."""
    separator, name, value = match.groups()
    return f"{separator}{name}={REDACTED if _QUERY_SECRET.search(name) else value}"


def redact_shapes(text: str) -> str:
    """``text`` with every credential shape and token-named query value as ``***`` (the rules
    only: values registered as secrets are the policy's, ``agentensemble.redaction``)."""
    if text.isascii():  # skip the rules whose literal cannot occur: a scan of the text each
        lowered = text.lower()
        for (pattern, replacement), needed in zip(_SHAPES or _shapes(), _NEEDED, strict=True):
            if any(literal in lowered for literal in needed):
                text = pattern.sub(replacement, text)
                lowered = text.lower()
        if "=" not in text:
            return text
    else:  # case-insensitive matching of other scripts is not plain lower(): every rule runs
        for pattern, replacement in _SHAPES or _shapes():
            text = pattern.sub(replacement, text)
    return _QUERY_PARAMETER.sub(_query_value, text)


def is_secret_name(name: str) -> bool:
    """Whether a variable, header, setting or field called ``name`` holds a credential
    (``OPENAI_API_KEY``, ``GITHUB_TOKEN``, ``Authorization``, ``DB_PASSWORD``, ``SENTRY_DSN``)."""
    return name.lower() not in _NOT_SECRET_NAMES and bool(SECRET_NAME.search(name))


# -- URLs ----------------------------------------------------------------------------------------

_TOKEN_LIKE: re.Pattern[str] = _on_first_use(
    "_TOKEN_LIKE", r"^(?=.*[0-9])(?=.*[A-Za-z])[A-Za-z0-9._~%+=-]{8,}$"
)
_PLAIN_SEGMENT: re.Pattern[str] = _on_first_use(
    "_PLAIN_SEGMENT",
    r"^(?:|v\d{1,2}|api|apis|mcp|sse|rpc|rest|json|messages?|events?|stream|hooks?|webhooks?|"
    r"services?|catch|triggers?|callbacks?|incoming|review|reviews|approvals?|approve|decide|"
    r"decisions?|withdraw|status|health|in|out)$",
    re.IGNORECASE,
)
"""Path segments shown in messages as they are: words every service uses. Any other segment of
a URL we hold a credential for may be the credential (``/hooks/catch/123456/opensesame``)."""


def looks_like_token(segment: str) -> bool:
    """A URL path segment that is a credential by its look: long, or letters mixed with
    digits. Registered on its own; every other segment but common words is only masked where
    the URL is shown (registering ``agentensemble`` from ``/hooks/agentensemble`` would mask
    the word in every message)."""
    return len(segment) >= 24 or bool(_TOKEN_LIKE.match(segment))


def _plain(segment: str) -> bool:
    return bool(_PLAIN_SEGMENT.match(segment))


def safe_url(url: str) -> str:
    """``url`` for messages: no user info, query or fragment (they may carry tokens), and every
    path segment but common plain words (``api``, ``mcp``, ``hooks``, ``v1``...) masked: hosted
    services put the credential in the path, and nothing tells a word from a token."""
    try:
        parts = urllib.parse.urlsplit(str(url))
        host, port = parts.hostname, parts.port
    except ValueError:
        return "<invalid URL>"
    if not parts.scheme or not host:
        return "<invalid URL>"
    shown_host = f"[{host}]" if ":" in host else host
    segments = [s if _plain(s) else REDACTED for s in parts.path.split("/")]
    return f"{parts.scheme}://{shown_host}{f':{port}' if port else ''}{'/'.join(segments)}"


PLAIN_HEADERS = frozenset(
    {"accept", "accept-encoding", "accept-language", "content-type", "user-agent"}
)
"""Headers that never carry a credential: registering ``application/json`` would only mangle
every message that mentions it."""


_URL_IN_TEXT: re.Pattern[str] = _on_first_use("_URL_IN_TEXT", r"[a-zA-Z][a-zA-Z0-9+.\-]*://\S+")


def urls_in(text: str) -> list[str]:
    """The URLs written in ``text`` (``scheme://...`` up to the next whitespace)."""
    return _URL_IN_TEXT.findall(text)


__all__ = [
    "PLAIN_HEADERS",
    "REDACTED",
    "SECRET_NAME",
    "is_secret_name",
    "looks_like_token",
    "redact_shapes",
    "safe_url",
    "urls_in",
]
