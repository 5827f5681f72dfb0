"""``--durable [DATABASE]`` for ``serve-api`` and ``serve-ag-ui``: the crew file's runs as durable
runs of a ``DurableRuntime`` in this process, so they survive a restart of the command (extra
``agentensemble-py[durable]``). The database is a ``sqlite:///`` or ``postgresql://`` URL, or a
plain path (a SQLite file); without a value, ``$AGENTENSEMBLE_DATABASE_URL`` or
``agentensemble.sqlite``. Every message shows the URL masked (``agentensemble._base.dsn``)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from agentensemble._base.dsn import mask_dsn, mask_in, sqlite_file_problem
from agentensemble.cli._common import UsageError
from agentensemble.cli.durable_command import DATABASE_ENV
from agentensemble.errors import ConfigurationError


def _database(value: str) -> str:
    """``--durable``'s value; a crew file there is the argument order gone wrong (``--durable``
    takes an optional value, so ``--durable crew.yaml`` would take the crew as the database)."""
    if value.endswith((".yaml", ".yml")):
        raise argparse.ArgumentTypeError(
            f"{value} looks like the crew file, not a database: write --durable after the crew "
            "file, or --durable=DATABASE"
        )
    return value


def add_durable_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--durable",
        nargs="?",
        const="",
        default=None,
        type=_database,
        metavar="DATABASE",
        help="run every run durably (it survives a restart): a SQLite file, a sqlite:/// or "
        f"postgresql:// URL, or nothing for ${DATABASE_ENV} (else agentensemble.sqlite); "
        "needs the durable extra",
    )


def durable_url(given: str) -> str:
    """``--durable``'s value as a database URL: a URL as it is, a plain path as a SQLite file,
    nothing as the durable package's default (checked by it)."""
    if not given:
        return ""
    if "://" in given:
        return given
    return f"sqlite:///{given}"


def where(runtime: Any) -> str:
    """The runtime's database for the start line, masked."""
    return f"durable runs in {mask_dsn(runtime.database_url)}"


@contextlib.contextmanager
def durable_runtime(
    args: argparse.Namespace, builders: dict[str, Callable[[], Any]]
) -> Iterator[Any]:
    """A launched ``DurableRuntime`` with ``builders`` registered (launching resumes the runs a
    stop or crash interrupted), shut down afterwards; None without ``--durable``. A database
    that cannot be used is a ``UsageError`` (exit 2) naming it masked."""
    if args.durable is None:
        yield None
        return
    try:
        from agentensemble.durable import DurableRuntime
        from agentensemble.durable._database import database_url, sqlite_path
    except ImportError as error:
        raise UsageError(
            f"--durable needs the durable extra: pip install 'agentensemble-py[durable]' ({error})"
        ) from None
    url = database_url(durable_url(args.durable) or None)  # refuses a bad URL, masked
    path = sqlite_path(url)
    problem = sqlite_file_problem(path) if path is not None else None
    if problem is not None:
        raise UsageError(f"--durable {mask_dsn(url)}: cannot hold durable runs: {problem}")
    try:
        runtime = DurableRuntime(url)
        for name, build in builders.items():
            runtime.register(name, build)
        runtime.launch()
    except ConfigurationError:
        raise  # the durable package's own sentence, its URL masked
    except Exception as error:  # a driver's failure: one line, credentials masked
        raise UsageError(
            f"--durable {mask_dsn(url)}: cannot hold durable runs "
            f"({type(error).__name__}: {mask_in(str(error), url)[:500]})"
        ) from None
    try:
        yield runtime
    finally:
        runtime.shutdown()


__all__ = ["add_durable_argument", "durable_runtime", "durable_url", "where"]
