"""Shared test configuration: async tests run on asyncio through anyio's pytest plugin, and
property tests never fail on a busy machine's timing."""

import itertools
import os
import sys
import tempfile
import textwrap
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Shared CI machines are slow and noisy: no per-example deadline, no "generation too slow" health
# check. Under CI the examples are derandomized, so a red run replays exactly on a developer's
# machine with ``CI=true``; locally each run explores fresh examples.
settings.register_profile(
    "agentensemble",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=bool(os.environ.get("CI")),
)
settings.load_profile("agentensemble")

# Memory stores given no embedder use the local one when wordllama is installed (it is, in the
# dev extra). Tests written for lexical recall say so here; the tests of the local embedder and
# of that default (tests/memory/test_memory_local_embedder.py) set it back. Subprocesses inherit.
os.environ.setdefault("AGENTENSEMBLE_EMBEDDER", "lexical")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- a real Postgres (durable runs, evals on workers, memory): one server for the whole session,
# started from the pgserver wheel (Postgres binaries) in a temporary folder, a fresh database per
# test that asks for one

_databases = itertools.count(1)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    with warnings.catch_warnings():  # a login without XDG_RUNTIME_DIR (su, ssh, a container):
        warnings.filterwarnings("ignore", "XDG_RUNTIME_DIR is not set")  # /tmp serves as well
        import pgserver

    with tempfile.TemporaryDirectory(prefix="agentensemble-pg-") as directory:
        server = pgserver.get_server(directory, cleanup_mode="stop")
        try:
            yield str(server.get_uri())
        finally:
            server.cleanup()


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """A fresh, empty database on the session's server."""
    import psycopg

    name = f"test_db_{next(_databases)}"
    with psycopg.connect(postgres_server, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {name}")
        connection.execute(f"CREATE DATABASE {name}")
    return postgres_server.replace("/postgres?", f"/{name}?", 1)


@pytest.fixture(params=["sqlite", "postgres"])
def any_database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database: a SQLite file, then a real Postgres one (the test runs on both)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/runs.sqlite"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture(params=["openai", "litellm"])
def model_lane(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test once per model lane: ``openai`` (straight to the endpoint, the default for
    ``openai/...`` models) and ``litellm`` (forced with ``AGENTENSEMBLE_LLM_LANE=litellm``).
    Suites that use it prove the two lanes indistinguishable."""
    lane: str = request.param
    if lane == "litellm":
        monkeypatch.setenv("AGENTENSEMBLE_LLM_LANE", "litellm")
    else:
        monkeypatch.delenv("AGENTENSEMBLE_LLM_LANE", raising=False)
    return lane


# -- crew files (tests/cli, tests/config): a temporary folder with a tools module beside them

TOOLS_MODULE = '''
from pydantic import BaseModel

from agentensemble import GuardrailResult, tool


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


class Verdict(BaseModel):
    ok: bool


def always_fails(output):
    return GuardrailResult.failure("never good enough")


NOT_A_TOOL = 42
'''


@pytest.fixture
def crew_file(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Write a crew file (and ``yaml_tools.py`` beside it); yields a function text -> path."""
    (tmp_path / "yaml_tools.py").write_text(TOOLS_MODULE)

    def write(text: str, name: str = "crew.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return path

    yield write
    sys.modules.pop("yaml_tools", None)
    if str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))
