"""Crew files as hostile input: where a built-in tool's sandbox lies, which module a built-in
tool's name loads, and a number too long to read."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentensemble.config import load_crew
from agentensemble.errors import ConfigurationError


def write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "crew.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


CREW_WITH_SANDBOXES = """
model: openai/m
agents:
  clerk:
    role: Clerk
    goal: File things
    tools:
      - file_read: {root: data}
      - run_command: {allow: [ls], cwd: work, requires_approval: false}
tasks:
  - {description: File it, agent: clerk}
"""


@pytest.mark.parametrize("elsewhere", [True, False])
def test_a_relative_root_or_cwd_is_the_crew_file_s_folder_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elsewhere: bool
) -> None:
    crew = write(tmp_path / "crew", CREW_WITH_SANDBOXES)
    (tmp_path / "crew" / "data").mkdir()
    (tmp_path / "crew" / "work").mkdir()
    cwd = tmp_path / "somewhere-else"
    cwd.mkdir()
    monkeypatch.chdir(cwd if elsewhere else tmp_path / "crew")
    ensemble = load_crew(crew)
    tools = {type(tool).__name__: tool for tool in ensemble.tasks[0].agent.tools}  # type: ignore[union-attr]
    assert Path(tools["FileRead"].root).resolve() == (tmp_path / "crew" / "data").resolve()
    assert Path(tools["RunCommand"].cwd).resolve() == (tmp_path / "crew" / "work").resolve()


def test_a_relative_root_missing_beside_the_crew_file_is_an_error_even_if_cwd_has_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crew = write(tmp_path / "crew", CREW_WITH_SANDBOXES)
    (tmp_path / "data").mkdir()  # only in the working directory
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match=r"crew\.yaml:"):
        load_crew(crew)


def test_a_stdlib_named_file_beside_the_crew_does_not_shadow_the_standard_library(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "shadowed"
    crew = write(
        tmp_path / "crew",
        """
        model: openai/m
        agents:
          reader: {role: Reader, goal: Read, tools: [{http_fetch: {allow: [example.com]}}]}
        tasks:
          - {description: Read it, agent: reader}
        """,
    )
    (tmp_path / "crew" / "html.py").write_text(
        f"open({str(marker)!r}, 'w').write('imported')\nraise ImportError('shadowed html')\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "agentensemble", "validate", str(crew)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OPENAI_API_KEY": "sk-not-used-0000"},
        cwd=tmp_path,
    )
    assert not marker.exists(), done.stderr
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "number",
    ["9" * 5000, "0x" + "f" * 5000, "0" + "7" * 6000, "-0b" + "1" * 20_000],
    ids=["decimal", "hex", "octal", "binary"],
)
def test_a_five_thousand_digit_integer_is_a_file_and_line_error_with_exit_2(
    tmp_path: Path, number: str
) -> None:
    """Hex, octal and binary integers of any length were read (a loop cap no run can reach, a
    value no prompt or error could show): every spelling is refused at its line."""
    crew = write(
        tmp_path,
        "model: openai/m\nagents:\n  a:\n    role: R\n    max_iterations: "
        + number
        + "\ntasks:\n  t: {description: D, agent: a}\n",
    )
    with pytest.raises(ConfigurationError) as caught:
        load_crew(crew)
    assert "crew.yaml:5: agents.a.max_iterations" in str(caught.value)
    assert len(str(caught.value)) < 500  # the number is not echoed whole
    done = subprocess.run(
        [sys.executable, "-m", "agentensemble", "validate", str(crew)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "crew.yaml:5:" in done.stderr and "Traceback" not in done.stderr
