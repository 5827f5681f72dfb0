"""The one outward-redaction policy: what of a text must never leave the process.

Every channel that carries text out of the process (model-visible tool results, log lines, the
trace, OpenTelemetry spans and events, error messages, CLI output, web console payloads,
durable records) passes it through ``redact_text`` / ``redact``. The policy hides:

- secrets registered by value (``register_secret``): API keys read from the environment,
  webhook and MCP credentials, every ``env=`` value of an MCP server, tokens of our servers;
- credentials recognised by their shape, whatever name they travel under: key-shaped strings
  (``sk-...``, ``AIza...``, ``ghp_...``, ``xoxb-...``, ``AKIA...``), ``Bearer``/``Basic``
  credentials, ``api_key=...``-style assignments, the password of ``scheme://user:pw@host`` and
  token-named query parameters (``?access_token=...``);
- by key name, in structured values: whatever sits under ``api_key``, ``password``, ``token``...

This module owns the policy's state and its ways in: the secrets registered by value (and the
credentials of URLs, headers and command lines, registered), the policy's generation, hidden
characters, redacting a text (long ones section by section, with the caches of clean texts) or
a structured value. What a credential looks like (its shapes, secret names, token-like URL
segments, ``safe_url``) is stateless and lives in ``agentensemble/_base/credential_rules.py``;
its public names are re-exported here, where every caller imports them from.

A new surface calls ``redact_text`` (or ``redact`` for structured data) on what it sends out and
inherits every rule. Stdlib only (with its rules module, stdlib only too): importable from every
layer and package, cheap to import.
"""

from __future__ import annotations

import re
import sys
import threading
import unicodedata
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

from agentensemble._base.credential_rules import (
    PLAIN_HEADERS,
    REDACTED,
    SECRET_NAME,
    is_secret_name,
    looks_like_token,
    redact_shapes,
    safe_url,
    urls_in,
)

MIN_SECRET_LENGTH = 6
"""Registered values shorter than this are ignored: redacting them would mangle ordinary text."""

_known: set[str] = set()
_known_sorted: tuple[str, ...] = ()
_known_urls: dict[str, str] = {}  # a credential URL as written -> as shown (``safe_url``)
_urls_sorted: tuple[tuple[str, str], ...] = ()
_lock = threading.Lock()
_generation = 0  # moves on whenever the policy learns a secret: what was clean may not be now
_clean: dict[str, int] = {}
"""Texts ``redact_text`` returned unchanged -> the policy generation that found them clean. A
run redacts the same role, prompts and tool names into every trace; a text seen clean under
the current generation is returned as it is, with no scan. Only clean texts are kept (nothing
secret is held here), bounded in length and number."""
_CLEAN_LONGEST = 4096
_CLEAN_MOST = 256


def register_secret(value: str | None) -> None:
    """Remember a secret by value, so it is redacted wherever it shows up, whatever its shape.

    Credentials are registered where they are first held (keys read from the environment, webhook
    and MCP credentials, server tokens); an echo of one (a provider's error, a server's stderr, a
    traceback) is then hidden on every channel. Values shorter than six characters are ignored.
    """
    global _known_sorted, _generation
    if value and isinstance(value, str) and len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            if value not in _known:
                _known.add(value)
                _known_sorted = tuple(sorted(_known, key=len, reverse=True))
                _generation += 1  # after the secret is in: a text found clean before is stale


def policy_generation() -> int:
    """A number that moves on whenever the policy learns a secret: a text redacted under an
    older one may hold a secret learnt since (a cache of redacted texts checks it)."""
    return _generation


_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_PLAIN = re.compile(r"[\x20-\x7e\n\t]*")  # nothing hidden: the common case, one quick scan


def drop_hidden(text: str) -> str:
    """``text`` without the characters that hide or reorder what is shown: controls but newline
    and tab, format characters (bidi marks, zero-width spaces and joiners, the BOM), lone
    surrogates, private-use and unassigned code points, line and paragraph separators."""
    if _PLAIN.fullmatch(text):
        return text
    table = {
        ord(char): None
        for char in set(text)
        if char not in "\n\t" and unicodedata.category(char) in _HIDDEN_CATEGORIES
    }
    return text.translate(table) if table else text


def redact_text(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with registered secrets (and ``extra`` ones), then credential shapes, as ``***``.

    A secret split by hidden characters (``sk-\u200bproj...``, a registered value with a bidi
    mark inside) would pass the rules and be joined again by whoever reads the text: when the
    text without its hidden characters is redacted otherwise than the text as written (a secret
    crossed a hidden character), that text is the one redacted; otherwise the hidden characters
    stay, for a display to escape.

    A long text cut into sections by ``SECTION_BREAK`` (a prompt holding every earlier task's
    output) is redacted section by section, with the same result: see ``_sectioned``."""
    if not extra and len(text) <= _CLEAN_LONGEST and _clean.get(text) == _generation:
        return text  # seen clean under this very policy
    if len(text) > _SECTIONS_FROM and SECTION_BREAK in text:
        extra = tuple(extra)
        if _cuttable(extra):
            return _sectioned(text, extra)
    return _redact_whole(text, extra)


def _redact_whole(text: str, extra: Iterable[str]) -> str:
    generation = _generation  # read before the scan: a secret learnt meanwhile makes it stale
    joined = drop_hidden(text)
    if joined is text:  # nothing hidden: the common case
        result = _redacted(text, extra)
    else:
        extra = tuple(extra)
        as_written, as_read = _redacted(text, extra), _redacted(joined, extra)
        result = as_written if drop_hidden(as_written) == as_read else as_read
    if not extra and result == text and len(text) <= _CLEAN_LONGEST:
        if len(_clean) >= _CLEAN_MOST:
            _clean.clear()
        _clean[text] = generation
    return result


# -- long texts, section by section --------------------------------------------------------------

SECTION_BREAK = "\n\n### "
"""Where a long text may be cut for redaction: each context output in a task's prompt is its own
``### `` section (``execution/prompts.py``). The cut falls between the blank line and ``###``:
no rule matches across it (no rule starts at ``#`` or a space; the rules that cross a line end,
``Bearer``/``Basic`` and ``password: value``, need four or more characters other than ``#`` and
whitespace after it, and ``###`` is three), and a registered secret holding a line end followed
by ``#`` turns the cutting off. ``tests/test_redaction.py`` checks section by section equals
whole on every rule's texts cut at every place."""

_SECTIONS_FROM = 2048
"""Shorter texts are scanned whole: below about 2 kB, one scan costs less than the cutting."""
_clean_sections: dict[str, int] = {}
"""Sections (as cut, without their ``### `` and blank line) found clean under a policy
generation: a prompt holding every earlier output scans only the sections it has not seen.
Bounded like ``_clean``; only clean sections are kept, so nothing secret is held here."""
_SECTIONS_MOST_CHARS = 4_000_000
_sections_chars = 0
_clean_heads: tuple[tuple[str, int, int], ...] = ()
"""The latest sectioned texts found clean, as ``(text, cut, generation)``, ``cut`` the start of
the text's last section: the next task's prompt starts with the same sections (every earlier
output but the newest), so a text starting with ``text[:cut]`` followed by ``### `` has only
its sections from there on to check. Four are kept (concurrent tasks), all clean."""
_HEADS_MOST = 4
_REST_MOST = 8192
"""What follows a remembered start is scanned whole up to this length; a longer rest (an output
holding a secret is never remembered clean, so the rest grows from there) goes section by
section."""


def _cuttable(extra: tuple[str, ...]) -> bool:
    """Whether no secret could span a cut (none holds a line end followed by ``#``)."""
    return not any(
        "\n#" in value for value in (*extra, *_known_sorted, *(url for url, _ in _urls_sorted))
    )


def _sectioned(text: str, extra: tuple[str, ...]) -> str:
    """``redact_text(text)`` for a text holding ``SECTION_BREAK``: when it starts with the
    clean sections of a text seen before, only the sections after them are redacted."""
    generation = _generation  # read before the scans, as in ``_redact_whole``
    if not extra:
        for seen, cut, when in _clean_heads:
            if (
                when == generation
                and cut < len(text) <= cut + _REST_MOST
                and text.startswith("### ", cut)
                and starts_alike(text, seen, cut)
            ):
                rest = text[cut:]  # redacted at once: the newest output or two
                shown = _redact_whole(rest, extra)
                if shown == rest:
                    _remember_head(text, generation)
                    return text
                return seen[:cut] + shown
    result = _by_section(text.split(SECTION_BREAK), extra, generation)
    if result is None:
        if not extra:
            _remember_head(text, generation)
        return text
    return result


def starts_alike(text: str, start: str, length: int) -> bool:
    """``text[:length] == start[:length]`` for a ``start`` of at least ``length`` characters
    (False for a shorter one), with one copy: a freed prompt-sized copy is reused by the next
    one, and one compare in C costs a tenth of comparing in 8 kB slices. Used here for the
    clean heads of long prompts, and by the trace for prompts stored by reference."""
    return len(start) >= length and text.startswith(start[:length])


def _remember_head(text: str, generation: int) -> None:
    global _clean_heads
    if len(text) > _SECTIONS_MOST_CHARS:  # held as it is: bounded like the clean sections
        return
    cut = text.rfind(SECTION_BREAK) + 2  # the start of the last section
    _clean_heads = ((text, cut, generation), *_clean_heads[: _HEADS_MOST - 1])


def _section(cores: list[str], position: int) -> str:
    """Section ``position`` as it stands in the text: the cut falls before each ``### ``."""
    head = SECTION_BREAK[2:] if position else ""
    return head + cores[position] + ("\n\n" if position < len(cores) - 1 else "")


def _by_section(cores: list[str], extra: tuple[str, ...], generation: int) -> str | None:
    """The redaction of the text the ``cores`` were cut from, or None when it is clean: a
    middle section seen clean under ``generation`` is not scanned again, and the clean case
    (nothing to hide) scans only the sections not seen before."""
    last = len(cores) - 1
    if extra:
        unseen = list(range(last + 1))
    else:
        seen = list(map(_clean_sections.get, cores))
        unseen = [0, *(i for i in range(1, last) if seen[i] != generation), last]
    for position in unseen:
        section = _section(cores, position)
        if drop_hidden(section) is not section or _redacted(section, extra) != section:
            return _every_section(cores, extra, generation)
    if not extra:
        _remember_sections([cores[i] for i in unseen[1:-1]], generation)
    return None


def _remember_sections(cores: list[str], generation: int) -> None:
    global _sections_chars
    for core in cores:
        if _sections_chars + len(core) > _SECTIONS_MOST_CHARS:
            _clean_sections.clear()
            _sections_chars = 0
        _clean_sections[core] = generation
        _sections_chars += len(core)


def _every_section(cores: list[str], extra: tuple[str, ...], generation: int) -> str:
    """A sectioned text with something to hide: each section redacted (a middle one seen clean
    is kept as it is), hidden characters decided over the whole text as ``_redact_whole`` does,
    so the result is the same as the whole text's."""
    last = len(cores) - 1
    written: list[str] = []
    read: list[str] | None = None  # as read without hidden characters, once one is found
    clean: list[str] = []
    for position in range(last + 1):
        section = _section(cores, position)
        middle = 0 < position < last
        if middle and not extra and _clean_sections.get(cores[position]) == generation:
            result = section
        else:
            joined = drop_hidden(section)
            if joined is not section:
                if read is None:
                    read = list(written)
                written.append(_redacted(section, extra))
                read.append(_redacted(joined, extra))
                continue
            result = _redacted(section, extra)
            if middle and result == section:
                clean.append(cores[position])
        written.append(result)
        if read is not None:
            read.append(result)
    if not extra:
        _remember_sections(clean, generation)
    as_written = "".join(written)
    if read is None:
        return as_written
    as_read = "".join(read)
    return as_written if drop_hidden(as_written) == as_read else as_read


def _redacted(text: str, extra: Iterable[str]) -> str:
    for secret in extra:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    for url, shown in _urls_sorted:
        if url in text:
            text = text.replace(url, shown)
    for secret in _known_sorted:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return redact_shapes(text)


def looks_like_credential(value: str) -> bool:
    """Whether ``value`` holds a credential by the policy (registered, or credential-shaped):
    how ``RunCommand`` recognises ``MONGODB_URI=mongodb://app:pw@db`` whatever its name."""
    return redact_text(value) != value


def redact(value: Any, key: str | None = None) -> Any:
    """``value`` redacted at any depth: strings by the policy, anything under a secret-looking
    key (``api_key``, ``authorization``, ``password``...) replaced whole, a pydantic model as
    its redacted JSON data."""
    if key is not None and is_secret_name(key):
        return REDACTED if value not in (None, "") else value
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(v) for v in value)
    return _redacted_model(value)


def _redacted_model(value: Any) -> Any:
    """A pydantic model as its redacted JSON data: left whole, its dump or repr (a trace, a log
    line, a served result) showed its fields as they are. Anything else as it is."""
    main = sys.modules.get("pydantic.main")  # no model exists before pydantic.main is loaded
    if main is None or not isinstance(value, main.BaseModel):
        return value
    try:
        data = value.model_dump(mode="json")
    except Exception:  # a field pydantic cannot dump: its text, redacted
        return redact_text(repr(value))
    return redact(data)


# -- URLs, headers and command lines: their credentials registered ------------------------------


def register_url_secrets(url: str) -> None:
    """Register the credentials a URL may carry: user info, the query and its values, and
    token-like path segments (raw and percent-decoded); and the URL itself, so wherever it is
    written out (httpx's request log line, an error) it reads as ``safe_url`` shows it. Hosted
    services (MCP, webhooks) issue URLs whose path or query is the credential."""
    global _urls_sorted, _generation
    try:
        parts = urllib.parse.urlsplit(str(url))
        values = [parts.username, parts.password]
    except ValueError:
        return
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    shown = safe_url(base)
    if shown != base and len(base) >= MIN_SECRET_LENGTH:
        with _lock:
            for written in (base, urllib.parse.unquote(base)):
                _known_urls[written] = shown
            _urls_sorted = tuple(sorted(_known_urls.items(), key=lambda i: -len(i[0])))
            _generation += 1
    values += [v for _, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=False)]
    values += [parts.query, urllib.parse.unquote(parts.query)]
    for segment in parts.path.split("/"):
        if looks_like_token(segment):
            values += [segment, urllib.parse.unquote(segment)]
    for value in values:
        register_secret(value)


def register_header_secrets(headers: Mapping[str, str]) -> None:
    """Register every header value (but those of ``PLAIN_HEADERS``) and the credential part of
    ``Scheme credential`` values (``Bearer <token>``)."""
    for name, value in headers.items():
        if str(name).lower() in PLAIN_HEADERS or not isinstance(value, str):
            continue
        register_secret(value)
        register_secret(value.strip().partition(" ")[2].strip())


def register_argument_secrets(arguments: Iterable[str]) -> None:
    """Register the credentials in a command line: URLs' passwords, queries and path tokens
    (``postgresql://app:pw@db``), ``--password=...`` values, the argument after a secret-named
    flag (``--token VALUE``) and any other credential-shaped argument whole."""
    previous = ""
    for argument in arguments:
        flag = previous.lstrip("-")
        if previous.startswith("-") and "=" not in previous and is_secret_name(flag):
            register_secret(argument)
        elif looks_like_credential(argument):
            urls = urls_in(argument)
            for url in urls:
                register_url_secrets(url)
            _, sep, value = argument.partition("=")
            if sep and "://" not in value:
                register_secret(value)
            if not urls and not sep:
                register_secret(argument)
        previous = argument


def redact_command(command: Iterable[str]) -> str:
    """A command line for messages, each argument redacted by the policy."""
    return " ".join(redact_text(part) for part in command)


__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "SECRET_NAME",
    "drop_hidden",
    "is_secret_name",
    "looks_like_credential",
    "looks_like_token",
    "policy_generation",
    "redact",
    "redact_command",
    "redact_text",
    "register_argument_secrets",
    "register_header_secrets",
    "register_secret",
    "register_url_secrets",
    "safe_url",
    "starts_alike",
]
