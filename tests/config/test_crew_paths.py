"""Relative paths in a crew file (and a dataset file) are the file's folder's: the command line
run from another working directory builds the same tools, starts the same MCP servers and reads
the same files. Each row is a crew-file tool whose construction fails unless its relative path
is found beside the crew file."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import agentensemble
from agentensemble.config import load_crew
from agentensemble.errors import ConfigurationError

REPO_ROOT = Path(agentensemble.__file__).absolute().parent.parent
TINY_MCP_SERVER = (REPO_ROOT / "examples" / "_tiny_mcp_server.py").read_text()

NOTES_TOOL = '''
from pathlib import Path

from agentensemble import tool


class Notes:
    """A tool class of the user's own whose path argument is annotated as a path."""

    def __init__(self, path: Path, more: list[Path] | None = None) -> None:
        self.text = "".join(Path(p).read_text() for p in [path, *(more or [])])

    @tool
    def notes(self) -> str:
        """The team's notes."""
        return self.text
'''


@dataclass(frozen=True)
class Row:
    name: str
    tool: str  # the YAML of one entry of the agent's tools:
    files: dict[str, str]  # path beside the crew file -> text ("/" at the end: a folder)
    needs_mcp: bool = False


ROWS = [
    Row("built-in root", "file_read: {root: data}", {"data/": ""}),
    Row("built-in root, list", "ListDirectory: {root: data}", {"data/": ""}),
    Row(
        "built-in cwd",
        "run_command: {allow: [ls], cwd: work, requires_approval: false}",
        {"work/": ""},
    ),
    Row(
        "built-in by import path",
        "agentensemble.tools.builtin:FileWrite: {root: out, requires_approval: false}",
        {"out/": ""},
    ),
    Row(
        "own class, path-typed arguments",
        "crew_tools:Notes: {path: notes.txt, more: [sub/more.txt]}",
        {"crew_tools.py": NOTES_TOOL, "notes.txt": "n", "sub/more.txt": "m"},
    ),
    Row(
        "MCP server script in args",
        f"agentensemble.mcp:MCPServerStdio: {{command: {sys.executable!r}, args: [geo.py]}}",
        {"geo.py": TINY_MCP_SERVER},
        needs_mcp=True,
    ),
    Row(
        "MCP server command as a path",
        "agentensemble.mcp:MCPServerStdio: {command: ./bin/geo.sh}",
        {
            "bin/geo.sh": f"#!/bin/sh\nexec {sys.executable!r} geo.py\n",
            "geo.py": TINY_MCP_SERVER,
        },
        needs_mcp=True,
    ),
    Row(
        "MCP server cwd",
        f"agentensemble.mcp:MCPServerStdio: {{command: {sys.executable!r}, args: [geo.py], "
        "cwd: servers}",
        {"servers/geo.py": TINY_MCP_SERVER},
        needs_mcp=True,
    ),
]


def write_crew(folder: Path, row: Row) -> Path:
    for relative, text in row.files.items():
        target = folder / relative
        if relative.endswith("/"):
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        if target.suffix == ".sh":
            target.chmod(0o755)
    folder.mkdir(parents=True, exist_ok=True)
    crew = folder / "crew.yaml"
    crew.write_text(
        textwrap.dedent(
            f"""\
            model: openai/gpt-4o-mini
            agents:
              clerk:
                role: Clerk
                goal: Answer
                tools:
                  - {row.tool}
            tasks:
              - {{description: Answer the question, agent: clerk}}
            """
        )
    )
    return crew


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command line as a user runs it, in a fresh process, from ``cwd``."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["PYTHONPATH"] = str(REPO_ROOT)  # this checkout, whatever else the environment points at
    return subprocess.run(
        [sys.executable, "-m", "agentensemble", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_validate_from_another_directory_finds_the_paths_beside_the_crew_file(
    tmp_path: Path, row: Row
) -> None:
    if row.needs_mcp:
        pytest.importorskip("mcp")
    crew = write_crew(tmp_path / "project" / "crew", row)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = cli("validate", str(crew), "--model", "scripted", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    if row.needs_mcp:
        assert "started and stopped: MCP server" in done.stdout
    assert sorted(p.name for p in elsewhere.iterdir()) == []  # nothing written where we ran


@pytest.mark.parametrize(
    "row", [row for row in ROWS if not row.needs_mcp], ids=lambda row: row.name
)
def test_the_same_paths_in_the_working_directory_only_are_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row: Row
) -> None:
    """Resolved against the crew file's folder, not merely found somewhere: files that exist only
    in the working directory do not count (a crew_tools module beside the crew stays)."""
    crew = write_crew(tmp_path / "crew", row)
    for relative in row.files:
        if relative != "crew_tools.py":  # everything else moves to the working directory
            target = tmp_path / relative.rstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / "crew" / relative.rstrip("/")).rename(target)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match=r"crew\.yaml:"):
        load_crew(crew)


def test_an_absolute_path_and_a_program_on_path_are_left_alone(tmp_path: Path) -> None:
    from agentensemble.config._crew_paths import in_crew_folder
    from agentensemble.mcp import MCPServerStdio
    from agentensemble.tools.builtin import FileRead

    folder = str(tmp_path)
    assert in_crew_folder(FileRead, {"root": "/srv/data"}, folder) == {"root": "/srv/data"}
    assert in_crew_folder(FileRead, {"root": "~/data"}, folder) == {
        "root": os.path.expanduser("~/data")
    }
    server = in_crew_folder(MCPServerStdio, {"command": "npx", "args": ["-y", "pkg"]}, folder)
    assert server == {"command": "npx", "args": ["-y", "pkg"], "cwd": folder}


CHECKS = '''
from pathlib import Path


class AnswerMentions:
    """An evaluator class of the user's own, reading its word from a file beside the dataset."""

    def __init__(self, word_file: Path) -> None:
        self.word = Path(word_file).read_text().strip()

    def __call__(self, ctx: object) -> bool:
        return self.word in str(getattr(ctx, "output", ""))
'''


def test_eval_from_another_directory_finds_files_beside_the_dataset(tmp_path: Path) -> None:
    crew = write_crew(tmp_path / "crew", Row("plain", "calculator", {}))
    evals = tmp_path / "evals"
    evals.mkdir()
    (evals / "checks.py").write_text(CHECKS)
    (evals / "word.txt").write_text("Answer\n")
    (evals / "dataset.yaml").write_text(
        "name: relative\ncases:\n  - name: one\n    evaluators:\n"
        "      - checks:AnswerMentions: {word_file: word.txt}\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = cli("eval", str(crew), str(evals / "dataset.yaml"), "--model", "scripted", cwd=elsewhere)
    assert done.returncode == 0, done.stdout + done.stderr
