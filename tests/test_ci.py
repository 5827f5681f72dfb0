"""What ``make test`` and CI promise: the test command changes nothing on the system, CI installs
the browser first, the suite runs side by side, and benchmarks stay out of the default run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAKEFILE = (REPO / "Makefile").read_text()
CI = (REPO / ".ci" / "run").read_text()


def _recipe(target: str) -> str:
    """The rule line and recipe of one Makefile target."""
    found = re.search(rf"^{re.escape(target)}:.*\n(?:\t.*\n|#.*\n)*", MAKEFILE, re.MULTILINE)
    assert found, f"no {target} target in the Makefile"
    return found.group()


def test_make_test_installs_nothing_on_the_system() -> None:
    rule = _recipe("test")
    assert "browser" not in rule.splitlines()[0]  # no prerequisite that runs apt-get
    assert "apt-get" not in rule


def test_make_browser_never_upgrades_what_is_installed() -> None:
    assert "apt-get install -y --no-upgrade chromium chromium-driver" in _recipe("browser")


def test_ci_installs_the_browser_before_the_tests_that_require_it() -> None:
    lines = [line.strip() for line in CI.splitlines()]
    assert lines.index("make browser") < lines.index("AGENTENSEMBLE_REQUIRE_BROWSER=1 make test")


def test_the_suite_runs_side_by_side_and_benchmarks_run_apart() -> None:
    assert "-n $(TEST_WORKERS) --dist loadfile" in _recipe("test")
    assert "-m bench_smoke" in _recipe("bench-smoke")
    assert "make bench-smoke" in CI  # the scripts still cannot rot


BROWSER_MODULES = ("tests/web/test_web_browser.py", "tests/evals/test_html_report.py")


@pytest.mark.timeout(600)
def test_a_missing_browser_is_one_line_of_the_summary() -> None:
    env = {
        **os.environ,
        "AGENTENSEMBLE_CHROMIUM": "/nonexistent/chromium",
        "PYTHONPATH": str(REPO),
    }
    env.pop("AGENTENSEMBLE_REQUIRE_BROWSER", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-m", "browser", *BROWSER_MODULES],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 1, done.stdout
    assert "browser tests skipped" in skipped[0] and "sudo make browser" in skipped[0]


BENCH_SMOKE = [
    "tests/durable/test_durable_bench_smoke.py",
    "tests/evals/test_evals_concurrency_bench_smoke.py",
    "tests/memory/test_memory_bench_smoke.py",
    "tests/benchmarks/test_concurrency_bench_smoke.py",
]


@pytest.mark.timeout(600)  # two fresh pytest processes: slow on a loaded machine, not stuck
def test_benchmark_smoke_runs_are_deselected_by_default_and_selected_by_their_marker() -> None:
    def collected(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", *args, *BENCH_SMOKE],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        return done.stdout

    by_default = re.search(r"no tests collected \((\d+) deselected\)", collected())
    assert by_default is not None  # every smoke run is left out of make test
    count = int(by_default.group(1))
    assert count >= len(BENCH_SMOKE)  # at least one a file
    assert f"{count} tests collected" in collected("-m", "bench_smoke")  # and all come back
