"""Shared test configuration: async tests run on asyncio through anyio's pytest plugin, and
property tests never fail on a busy machine's timing.

``make test`` runs the suite under pytest-xdist (``-n 4 --dist loadfile``): every fixture here is
per worker process (its own Postgres in its own temporary folder, ports chosen by the kernel), so
workers share nothing but the read-only tree. Benchmark smoke runs (``bench_smoke``) are left out
of the default run; ``make bench-smoke`` (``pytest -m bench_smoke``) runs them.
"""

import itertools
import os
import sys
import tempfile
import textwrap
import warnings
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

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


# -- what runs by default: benchmarks are not tests of behaviour

BENCH_SMOKE = "bench_smoke"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{BENCH_SMOKE}: runs a benchmark script at its smallest sizes so it cannot rot; left out "
        "of the default run (make bench-smoke, or pytest -m bench_smoke, runs it)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the benchmark smoke runs unless the ``-m`` expression names them."""
    if BENCH_SMOKE in (config.option.markexpr or ""):
        return
    kept = [item for item in items if item.get_closest_marker(BENCH_SMOKE) is None]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


# -- a missing browser is ONE line in the summary, whichever module found it missing: every
# "browser tests skipped" report points at tests/web/_browser.py, so pytest folds them together

BROWSER_SKIPPED = "browser tests skipped"
BROWSER_FINDER = str(Path(__file__).parent / "web" / "_browser.py")


def _one_browser_line(report: pytest.CollectReport | pytest.TestReport) -> None:
    longrepr = report.longrepr
    if report.skipped and isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
        if BROWSER_SKIPPED in reason:
            report.longrepr = (BROWSER_FINDER, 0, reason)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    report = yield
    _one_browser_line(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, Any]:
    report = yield
    _one_browser_line(report)
    if hasattr(item.config, "workerinput"):  # an xdist worker sends the report as UTF-8
        _sendable(report)
    return report


def _sendable(report: pytest.TestReport) -> None:
    """Captured output with a lone surrogate (tests of hostile text print some) cannot cross
    xdist's UTF-8 channel and would crash the worker: write those characters as escapes."""

    def clean(text: str) -> str:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")

    report.sections = [(title, clean(content)) for title, content in report.sections]
    if report.longrepr is not None and not isinstance(report.longrepr, tuple):
        text = str(report.longrepr)  # a failure's traceback, rendered as the terminal shows it
        if clean(text) != text:
            report.longrepr = clean(text)


# -- a real Postgres (durable runs, evals on workers, memory): one server for the whole session
# (under xdist: one per worker process), started from the pgserver wheel (Postgres binaries) in a
# temporary folder of its own and reached through a Unix socket there (no TCP port to collide), a
# fresh database per test that asks for one

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


@pytest.fixture
def nested_folders() -> Iterator[Callable[[Path, int], Path]]:
    """``nest(root, depth)``: folders ``d/d/...`` ``depth`` deep under ``root``, made and removed
    one level at a time: past about 1,000 levels ``pathlib``'s ``mkdir(parents=True)`` and
    ``shutil.rmtree`` (so pytest's own cleanup of old temporary folders) recurse out."""
    made: list[list[Path]] = []

    def nest(root: Path, depth: int) -> Path:
        chain: list[Path] = []
        made.append(chain)
        for _ in range(depth):
            root = root / "d"
            root.mkdir()
            chain.append(root)
        return root

    yield nest
    for chain in made:
        for folder in reversed(chain):
            for entry in folder.iterdir():
                if not entry.is_dir() or entry.is_symlink():
                    entry.unlink()
            folder.rmdir()
