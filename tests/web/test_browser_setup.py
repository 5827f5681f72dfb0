"""Where the browser suite runs, and the one line it prints where it cannot (``_browser.py``).

``make test`` must pass for a normal user on any machine: the ``browser`` prerequisite installs
Chromium only as root with apt-get, and otherwise says how to run the browser tests.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from _browser import BrowserRequiredError, find_browser

REPO = Path(__file__).resolve().parents[2]


def _fake_binary(path: Path) -> str:
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_the_browser_named_in_the_environment_is_used(tmp_path: Path) -> None:
    chromium = _fake_binary(tmp_path / "chromium")
    driver = _fake_binary(tmp_path / "chromedriver")
    env = {"AGENTENSEMBLE_CHROMIUM": chromium, "AGENTENSEMBLE_CHROMEDRIVER": driver}
    assert find_browser(env) == (chromium, driver)


def test_without_a_browser_the_suite_is_skipped_with_one_line_saying_how_to_run_it(
    tmp_path: Path,
) -> None:
    env = {"AGENTENSEMBLE_CHROMIUM": str(tmp_path / "no-chromium")}
    reason = find_browser(env)
    assert isinstance(reason, str) and "\n" not in reason
    assert str(tmp_path / "no-chromium") in reason
    assert "sudo make browser" in reason and "AGENTENSEMBLE_CHROMIUM" in reason


def test_ci_fails_instead_of_skipping_when_the_browser_is_missing(tmp_path: Path) -> None:
    env = {"AGENTENSEMBLE_CHROMIUM": str(tmp_path / "none"), "AGENTENSEMBLE_REQUIRE_BROWSER": "1"}
    with pytest.raises(BrowserRequiredError, match="sudo make browser"):
        find_browser(env)


def test_ci_requires_the_browser_suite() -> None:
    assert "AGENTENSEMBLE_REQUIRE_BROWSER=1 make test" in (REPO / ".ci" / "run").read_text()


def _make_browser(*, user: str | None, path: str) -> subprocess.CompletedProcess[str]:
    """``make browser`` from a copy of the Makefile that any user may read, with no Chromium."""
    folder = Path(tempfile.mkdtemp(prefix="agentensemble-make-"))
    try:
        folder.chmod(0o755)
        shutil.copy(REPO / "Makefile", folder / "Makefile")
        (folder / "Makefile").chmod(0o644)
        command = ["make", "-s", "-C", str(folder), "browser"]
        command += [f"CHROMIUM={folder / 'no-chromium'}", f"CHROMEDRIVER={folder / 'no-driver'}"]
        if user is not None:
            command = ["runuser", "-u", user, "--", *command]
        return subprocess.run(
            command, capture_output=True, text=True, timeout=60, env={**os.environ, "PATH": path}
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_browser_as_a_normal_user_prints_one_line_and_succeeds() -> None:
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            pytest.skip("needs runuser to act as a normal user")
        result = _make_browser(user="nobody", path=os.environ["PATH"])
    else:
        result = _make_browser(user=None, path=os.environ["PATH"])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and "browser tests will be skipped" in lines[0], result.stdout
    assert "sudo make browser" in lines[0]
    assert "apt-get" not in result.stderr  # nothing tried to install


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_browser_without_apt_get_does_not_try_to_install(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with only the tools the recipe needs: no apt-get (macOS)
    bin_dir.mkdir()
    for name in ("make", "sh", "id", "echo"):
        found = shutil.which(name)
        if found:
            (bin_dir / name).symlink_to(found)
    result = _make_browser(user=None, path=str(bin_dir))
    assert result.returncode == 0, result.stderr
    assert "browser tests will be skipped" in result.stdout
