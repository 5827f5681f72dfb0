"""Database locations from the user: a connection string as messages may show it (the one way
every command and error path masks one: the durable runs' database, the memory stores, the web
console's ``--db``), and a SQLite file checked before a driver opens it.

``mask_dsn`` never raises, whatever it is given (a half-typed IPv6 host, a password holding an
unescaped ``@``, percent-encoding, a query-string secret, a SQLite path, garbage), and keeps
what tells the reader which database is meant: scheme, user, host, port, database::

    >>> mask_dsn("postgresql://app:p@ss@[::1]:5432/runs?sslpassword=x1y2z3")
    'postgresql://app:***@[::1]:5432/runs?sslpassword=***'

``mask_in`` masks a driver's message that may repeat the URL or its password (psycopg's error for
an unclosed ``[`` quotes the whole URI). Both end with the outward-redaction policy
(``agentensemble.redaction``), so a registered secret is hidden too. Stdlib only.
"""

from __future__ import annotations

import re
import urllib.parse

from agentensemble.redaction import REDACTED, is_secret_name, redact_text

_SECRET_PARAMETER = re.compile(r"pass|secret|token|key|auth|cred", re.IGNORECASE)
"""Query parameters of a connection string whose value is a credential (``password``,
``sslpassword``, ``sslkey`` passphrases, ``auth_token``...)."""
_USER = re.compile(r"[^/?#=&\s]*")
"""What a user name may be: anything else before ``@`` is not one, and is hidden whole."""


def _split(url: str) -> tuple[str, str, str | None, str, str] | None:
    """``(scheme, user, password, host_and_path, query)`` of ``scheme://...``, else None
    (``password`` is None when the user info has no ``:``).

    The user info ends at the *last* ``@`` (a password may hold an unescaped ``@``, ``/`` or
    ``?``; when the query holds an ``@``, more is hidden, never less);
    the password is everything after the first ``:`` of the user info."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return None
    at = rest.rfind("@")
    userinfo, hostpath = (rest[:at], rest[at + 1 :]) if at >= 0 else ("", rest)
    query_at = _query_start(hostpath)
    hostpath, query = hostpath[:query_at], hostpath[query_at:]
    user, colon, password = userinfo.partition(":")
    if not _USER.fullmatch(user):  # not a user name: hidden with what follows it
        return scheme, REDACTED, None, hostpath, query
    return scheme, user, password if colon else None, hostpath, query


def _query_start(text: str) -> int:
    found = [i for i in (text.find("?"), text.find("#")) if i >= 0]
    return min(found) if found else len(text)


def _masked_query(query: str) -> str:
    if not query:
        return ""
    head, body = query[0], query[1:]
    parts = []
    for item in body.split("&"):
        name, eq, value = item.partition("=")
        secret = eq and value and (_SECRET_PARAMETER.search(name) or is_secret_name(name))
        parts.append(f"{name}={REDACTED}" if secret else item)
    return head + "&".join(parts)


def mask_dsn(url: object) -> str:
    """``url`` for a message: its password and secret query values as ``***``, the rest kept.
    A text that is no ``scheme://`` URL (a SQLite path, ``host=db password=...``, garbage) is
    shown as the redaction policy shows any text."""
    text = str(url)
    parts = _split(text)
    if parts is None:
        return redact_text(text)
    scheme, user, password, hostpath, query = parts
    if password is None:
        userinfo = f"{user}@" if user else ""
    else:  # an empty password has nothing to hide
        userinfo = f"{user}:{REDACTED if password else ''}@"
    return redact_text(f"{scheme}://{userinfo}{hostpath}{_masked_query(query)}")


def dsn_secrets(url: object) -> list[str]:
    """The credentials ``url`` holds, as written and percent-decoded: its password and secret
    query values (what ``mask_in`` hides from a driver's message)."""
    parts = _split(str(url))
    if parts is None:
        return []
    _, _, password, _, query = parts
    values = [password or ""]
    for item in query[1:].split("&"):
        name, _, value = item.partition("=")
        if value and (_SECRET_PARAMETER.search(name) or is_secret_name(name)):
            values.append(value)
    found: list[str] = []
    for value in values:
        for form in (value, urllib.parse.unquote(value)):
            # a driver splits an unescaped '@' or '/' elsewhere ("host 'ss99word@db'"): each
            # piece is hidden too (the policy ignores pieces too short to be told from words)
            for piece in (form, *re.split(r"[@/?#:]", form)):
                if piece and piece not in found:
                    found.append(piece)
    return sorted(found, key=len, reverse=True)


def mask_in(text: str, url: object) -> str:
    """``text`` (a driver's error, a traceback line) with ``url`` and its credentials masked,
    wherever they appear, and the redaction policy applied."""
    written = str(url)
    if written and written in text:
        text = text.replace(written, mask_dsn(written))
    return redact_text(text, extra=dsn_secrets(written))


def sqlite_file_problem(path: str) -> str | None:
    """Why the existing file at ``path`` cannot be opened as a SQLite database (it is something
    else, or unreadable), or None: checked read-only before a driver opens it, so a wrong path
    is one sentence instead of a driver's traceback. A missing file is not a problem here."""
    import os
    import sqlite3
    import urllib.request

    if os.path.isdir(path):
        return "it is a folder, not a database file"
    if not os.path.isfile(path):
        return None
    uri = f"file:{urllib.request.pathname2url(os.path.abspath(path))}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True)
        try:
            connection.execute("PRAGMA schema_version").fetchone()
        finally:
            connection.close()
    except sqlite3.Error as error:
        return f"{str(error).rstrip('.')} (is it the right file?)"
    return None


__all__ = ["dsn_secrets", "mask_dsn", "mask_in", "sqlite_file_problem"]
