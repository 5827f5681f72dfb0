"""The durable runs' database: which URL, shown without its credentials, reached or refused in one
line that says what to do.

Every entry point (the runtime, the client, the command line) goes through ``database_url`` and
``check_database`` before DBOS or a driver sees the URL, so a mistyped URL, a missing folder, an
unreachable Postgres or a database no worker has prepared is one sentence, never a driver
traceback, and a read-only command never creates a file.
"""

from __future__ import annotations

import os

from agentensemble._base.dsn import mask_dsn, mask_in
from agentensemble.errors import ConfigurationError

DATABASE_ENV = "AGENTENSEMBLE_DATABASE_URL"
DEFAULT_DATABASE_URL = "sqlite:///agentensemble.sqlite"
_SCHEMES = ("sqlite", "postgresql", "postgres")
_WHERE = f"the database_url argument, --database, or ${DATABASE_ENV}"


class DatabaseUnavailableError(ConfigurationError):
    """The durable database cannot be used as it stands; the message says what to do."""


def mask_url(url: str) -> str:
    """``url`` as errors show it: the outward-redaction policy masks its password and secret
    query values, and keeps scheme, user, host and database, so the reader can tell which
    database is meant (``agentensemble._base.dsn``: every URL shape, never raises)."""
    return mask_dsn(url)


def sqlite_path(url: str) -> str | None:
    """The file of a ``sqlite:///`` URL, or None (another database, or in memory)."""
    if not url.startswith("sqlite:///"):
        return None
    path = url[len("sqlite:///") :].split("?", 1)[0]
    return None if not path or path == ":memory:" else path


def database_url(url: str | None = None) -> str:
    """The database to use: ``url``, else ``$AGENTENSEMBLE_DATABASE_URL``, else a SQLite file;
    refused with a sentence naming the problem when it cannot hold durable runs."""
    chosen = url or os.environ.get(DATABASE_ENV) or DEFAULT_DATABASE_URL
    shown = mask_url(chosen)
    scheme = chosen.partition("://")[0] if "://" in chosen else ""
    if scheme.split("+", 1)[0].lower() not in _SCHEMES:
        raise ConfigurationError(
            f"database URL {shown!r} is not supported"
            + (f" (scheme {scheme!r})" if scheme else " (no scheme)")
            + f": use sqlite:///path/to/runs.sqlite or postgresql://user:password@host/db "
            f"({_WHERE})"
        )
    if scheme == "sqlite":
        path = chosen[len("sqlite:") :].lstrip("/").split("?", 1)[0]
        if not chosen.startswith("sqlite:///") or not path:
            raise ConfigurationError(
                f"database URL {shown!r} names no file: use sqlite:///runs.sqlite (relative) or "
                f"sqlite:////abs/path/runs.sqlite ({_WHERE})"
            )
        if path == ":memory:" or "mode=memory" in chosen:
            raise ConfigurationError(
                f"database URL {shown!r} is an in-memory SQLite database, which cannot hold "
                "durable runs (it is gone with the process, and every connection sees its own): "
                f"use a file such as sqlite:///runs.sqlite ({_WHERE})"
            )
    return chosen


def check_database(url: str, *, read_only: bool) -> None:
    """Refuse, in one line, a database that cannot be used: a SQLite file in a missing folder,
    a SQLite file that does not exist yet when only reading (never created here), or a Postgres
    server that does not answer."""
    path = sqlite_path(url)
    if path is not None:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise DatabaseUnavailableError(
                f"the folder of the SQLite database {path!r} does not exist ({folder}): create "
                f"it, or point {_WHERE} elsewhere"
            )
        if read_only and not os.path.exists(path):
            raise DatabaseUnavailableError(
                f"no durable database at {path!r}: nothing has run there yet. Check the path "
                f"({_WHERE}), or start a worker first: agentensemble durable worker MODULE"
            )
        return
    if url.startswith(("postgresql", "postgres")):
        _check_postgres(url)


def _check_postgres(url: str) -> None:
    import psycopg  # installed with the durable extra (dbos depends on it)

    plain = url.replace("postgresql+psycopg://", "postgresql://", 1)
    try:
        psycopg.connect(plain, connect_timeout=5).close()
    except Exception as error:  # any driver failure: one line, credentials masked
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise DatabaseUnavailableError(
            f"cannot reach the Postgres database {mask_url(url)!r}: {_masked(first, url)}"
        ) from None


def no_schema_error(url: str) -> DatabaseUnavailableError:
    """The one line for a database that exists but that no worker (or client) has prepared."""
    return DatabaseUnavailableError(
        f"the database {mask_url(url)!r} holds no durable runs yet (no worker has launched on "
        "it): start one with agentensemble durable worker MODULE, or submit a run with "
        "DurableClient, which prepares it"
    )


def is_missing_schema(error: BaseException) -> bool:
    """Whether a driver error says DBOS's tables are not there."""
    text = str(error).lower()
    return "no such table" in text or ("relation" in text and "does not exist" in text)


def _masked(text: str, url: str) -> str:
    """A driver's message with the URL and its password (should it repeat them) masked too."""
    return mask_in(text, url)


__all__ = [
    "DATABASE_ENV",
    "DEFAULT_DATABASE_URL",
    "DatabaseUnavailableError",
    "check_database",
    "database_url",
    "is_missing_schema",
    "mask_url",
    "no_schema_error",
    "sqlite_path",
]
