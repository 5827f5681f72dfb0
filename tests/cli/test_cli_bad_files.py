"""Bad files and bad database locations on the command line: one line naming what was wrong,
the documented exit code, never a traceback and never a password (issue 38)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import agentensemble

REPO_ROOT = Path(agentensemble.__file__).absolute().parent.parent
CREW = REPO_ROOT / "examples" / "evals" / "crew.yaml"
PASSWORD = "s3cretPassw0rd"


def agentensemble_cli(
    *args: str | Path, cwd: Path, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTENSEMBLE_")}
    env |= {"PYTHONPATH": str(REPO_ROOT), "HOME": str(cwd), **(extra_env or {})}
    return subprocess.run(
        [sys.executable, "-m", "agentensemble", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """stderr, checked to be one error line (argparse's usage lines aside), no traceback."""
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if not line.startswith(("usage:", " "))]
    assert len(errors) == 1, done.stderr
    return errors[0]


DATASETS = [
    ("deep.json", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("digits.json", '{"cases": [{"name": "a", "inputs": {"x": ' + "9" * 5000 + "}}]}", "4300"),
    ("dup.json", '{"cases": [{"name": "a", "inputs": {}, "inputs": {"topic": 1}}]}', "'inputs'"),
    ("deep.yaml", "[" * 100_000 + "]" * 100_000, "too deep"),
]


@pytest.mark.parametrize(("name", "text", "words"), DATASETS)
def test_eval_on_a_hostile_dataset_exits_2_naming_the_file(
    tmp_path: Path, name: str, text: str, words: str
) -> None:
    (tmp_path / name).write_text(text)
    done = agentensemble_cli("eval", CREW, name, "--model", "scripted", cwd=tmp_path)
    assert done.returncode == 2, done.stderr  # bad input, not "evaluation failed"
    line = one_line(done)
    assert name in line and words in line


def not_a_database(tmp_path: Path) -> Path:
    path = tmp_path / "runs.sqlite"
    path.write_text("these are my notes, not a database\n" * 10)
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("durable", "runs", "--database", "sqlite:///runs.sqlite"),
        ("durable", "steps", "some-run", "--database", "sqlite:///runs.sqlite"),
        ("durable", "prune", "--keep-last", "3", "--database", "sqlite:///runs.sqlite"),
        ("serve", "--db", "runs.sqlite", "--port", "0"),
        ("memory", "list", "scope", "--store", "runs.sqlite"),
        ("reviewers", "add", "bob", "--db", "runs.sqlite"),
        ("reviewers", "list", "--db", "runs.sqlite"),
    ],
)
def test_a_file_that_is_not_a_database_is_one_line(tmp_path: Path, args: tuple[str, ...]) -> None:
    pytest.importorskip("dbos" if args[0] == "durable" else "agentensemble")
    not_a_database(tmp_path)
    done = agentensemble_cli(*args, cwd=tmp_path)
    assert done.returncode in (1, 2), done.stderr
    line = one_line(done)
    assert "runs.sqlite" in line and "not a database" in line


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("durable", "runs", "--database", "sqlite:///a-folder"), "it is a folder"),
        (("durable", "steps", "run-1", "--database", "sqlite:///a-folder"), "it is a folder"),
        (("reviewers", "list", "--db", "a-folder"), "--db a-folder: cannot be used"),
        (("reviewers", "add", "bob", "--db", "a-folder"), "--db a-folder: cannot be used"),
    ],
)
def test_a_folder_given_as_a_database_is_one_line(
    tmp_path: Path, args: tuple[str, ...], words: str
) -> None:
    """A traceback from the driver (``unable to open database file``) and exit 1."""
    pytest.importorskip("dbos" if args[0] == "durable" else "agentensemble")
    (tmp_path / "a-folder").mkdir()
    done = agentensemble_cli(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert words in one_line(done)


@pytest.mark.parametrize("action", [("list",), ("revoke", "bob")])
def test_listing_or_revoking_reviewers_creates_no_database(
    tmp_path: Path, action: tuple[str, ...]
) -> None:
    """A typo in --db made an empty database and said "no reviewers yet"."""
    done = agentensemble_cli("reviewers", *action, "--db", "typo.sqlite", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "no console database at 'typo.sqlite'" in one_line(done)
    assert not (tmp_path / "typo.sqlite").exists()


@pytest.mark.parametrize("age", ["99999999999w", "1e400s", "nan", "infd"])
def test_an_age_too_long_for_prune_is_a_usage_error(tmp_path: Path, age: str) -> None:
    done = agentensemble_cli("durable", "prune", f"--older-than={age}", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "--older-than" in one_line(done)


BAD_URLS = [
    f"postgresql://app:{PASSWORD}@[::1/runs",  # an unclosed IPv6 bracket
    f"postgresql://app:{PASSWORD}@[::1",
    f"postgresql://app:{PASSWORD[:6]}@{PASSWORD[6:]}@127.0.0.1:1/runs",  # an unescaped '@'
    f"postgresql://app@127.0.0.1:1/runs?sslmode=disable&password={PASSWORD}",
]


@pytest.mark.parametrize("url", BAD_URLS)
@pytest.mark.parametrize("via", ["option", "environment"])
def test_a_durable_database_url_never_shows_its_password(
    tmp_path: Path, url: str, via: str
) -> None:
    pytest.importorskip("dbos")
    if via == "option":
        done = agentensemble_cli("durable", "runs", "--database", url, cwd=tmp_path)
    else:
        extra = {"AGENTENSEMBLE_DATABASE_URL": url}
        done = agentensemble_cli("durable", "runs", cwd=tmp_path, extra_env=extra)
    assert done.returncode == 2, done.stderr
    line = one_line(done)
    assert "***" in line
    for piece in (PASSWORD, PASSWORD[:6], PASSWORD[6:]):
        assert piece not in done.stdout + done.stderr


@pytest.mark.parametrize("url", BAD_URLS[1:3])
@pytest.mark.parametrize("command", ["memory", "serve"])
def test_memory_and_serve_never_show_a_database_password(
    tmp_path: Path, url: str, command: str
) -> None:
    pytest.importorskip("psycopg")
    if command == "memory":
        done = agentensemble_cli("memory", "list", "scope", "--store", url, cwd=tmp_path)
    else:
        done = agentensemble_cli("serve", "--db", url, "--port", "0", cwd=tmp_path)
    assert done.returncode != 0
    one_line(done)
    for piece in (PASSWORD, PASSWORD[:6], PASSWORD[6:]):
        assert piece not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--save", "a-folder"), "--save: 'a-folder' is a folder"),
        (("--html", "missing/report.html"), "--html: the folder"),
        (("--save", "a-folder/"), "--save: 'a-folder/' is a folder"),
    ],
)
def test_eval_refuses_a_report_path_it_cannot_write_before_running_anything(
    tmp_path: Path, args: tuple[str, ...], words: str
) -> None:
    """It ran every case (paid for every model call), then died on the save with a
    traceback and exit 1, as if the evaluation had failed."""
    (tmp_path / "a-folder").mkdir()
    dataset = REPO_ROOT / "examples" / "evals" / "dataset.yaml"
    done = agentensemble_cli("eval", CREW, dataset, "--model", "scripted", *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert words in one_line(done)
    assert "Evaluation" not in done.stdout  # nothing ran


def test_durable_trace_refuses_an_out_path_it_cannot_write(tmp_path: Path) -> None:
    (tmp_path / "a-folder").mkdir()
    done = agentensemble_cli(
        "durable", "trace", "run-1", "--out", "a-folder", "--database", "sqlite:///runs.sqlite",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--out: 'a-folder' is a folder; give a file name" in one_line(done)


@pytest.mark.parametrize(
    "store", ["runs.sqlite", f"postgresql://app:{PASSWORD}@127.0.0.1:1/db"], ids=["file", "pg"]
)
def test_memory_on_a_store_it_cannot_open_exits_2_like_the_other_commands(
    tmp_path: Path, store: str
) -> None:
    """`durable`, `serve` and `reviewers` exit 2 for a database they cannot open; `memory`
    exited 1, which a script reads as "the command ran and failed"."""
    not_a_database(tmp_path)
    done = agentensemble_cli("memory", "list", "scope", "--store", store, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert PASSWORD not in one_line(done)


@pytest.mark.parametrize(
    "args",
    [
        ("serve", "--port", "0", "--db", "missing/deeper/console.sqlite3"),
        ("reviewers", "add", "bob", "--db", "missing/deeper/console.sqlite3"),
    ],
    ids=["serve", "reviewers"],
)
def test_a_console_database_in_a_missing_folder_is_refused_and_no_folder_made(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """The console's store made every missing folder of --db (as root, anywhere: /typo/x)."""
    done = agentensemble_cli(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "missing/deeper/console.sqlite3' does not exist" in one_line(done)
    assert not (tmp_path / "missing").exists()


def special_file(kind: str, where: Path) -> Path:
    """A path that is no regular file: a FIFO (a plain open waits for a writer for ever), a
    link to ``/dev/zero`` (``stat`` says 0 bytes; read, it never ends), or a folder."""
    path = where / f"{kind}.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    return path


# what reads a file from the command line -> (its arguments given the special file, exit code)
SPECIAL_READERS = {
    "a crew file (run)": lambda f: ("run", f, "--model", "scripted"),
    "a crew file with --review": lambda f: ("run", f, "--model", "scripted", "--review", "console"),
    "a crew file (serve-api)": lambda f: ("serve-api", f, "--model", "scripted", "--port", "0"),
    "--page (serve-api)": lambda f: ("serve-api", CREW, "--model", "scripted", "--page", f),
    "--baseline (eval)": lambda f: (
        ("eval", CREW, "dataset.yaml", "--model", "scripted", "--baseline", f)
    ),
}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
@pytest.mark.parametrize("kind", ["fifo", "zero", "folder"])
@pytest.mark.parametrize("reader", sorted(SPECIAL_READERS))
def test_a_file_argument_that_is_no_regular_file_is_one_line_never_a_wait(
    tmp_path: Path, reader: str, kind: str
) -> None:
    """A FIFO named as a crew file, a page or a baseline blocked the command for ever, and a link
    to /dev/zero read until memory ran out: each is read as a bounded regular file now."""
    pytest.importorskip("uvicorn")
    (tmp_path / "dataset.yaml").write_text("cases:\n  - name: a\n    inputs: {topic: x}\n")
    path = special_file(kind, tmp_path)
    done = agentensemble_cli(*SPECIAL_READERS[reader](path), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    line = one_line(done)
    assert path.name in line and "not a regular file" in line, line
