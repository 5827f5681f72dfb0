"""``agentensemble eval`` through a real subprocess: exit 0 pass, 1 fail or regression, 2 bad
input; the report on stdout; a progress bar on a terminal only."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

import agentensemble

REPO_ROOT = Path(agentensemble.__file__).absolute().parent.parent
EXAMPLES = REPO_ROOT / "examples" / "evals"
CREW = EXAMPLES / "crew.yaml"
DATASET = EXAMPLES / "dataset.yaml"


def env() -> dict[str, str]:
    clean = {
        k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "AGENTENSEMBLE_MODEL")
    }
    clean["PYTHONPATH"] = str(REPO_ROOT)
    return clean


def agentensemble_eval(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentensemble", "eval", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env(),
        cwd=REPO_ROOT,
    )


def test_a_passing_dataset_exits_0_and_saves_its_reports(tmp_path: Path) -> None:
    done = agentensemble_eval(
        CREW, DATASET, "--model", "scripted", "--repeat", "2",
        "--save", tmp_path / "r.json", "--html", tmp_path / "r.html",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Evaluation research-then-write: 3 case(s) x 2 run(s)" in done.stdout
    assert "PASSED: 3/3 cases (100%)" in done.stdout
    assert "\r" not in done.stderr and "[###" not in done.stderr  # no bar when not a terminal
    saved = json.loads((tmp_path / "r.json").read_text())
    assert [c["case"]["name"] for c in saved["cases"]] == [
        "tides",
        "compilers",
        "rust borrow checker",
    ]
    assert all(len(c["runs"]) == 2 for c in saved["cases"])
    judged = saved["cases"][1]["runs"][0]["results"]["LLMJudge"]
    assert judged["reason"] == "scripted judge (dry run)"  # a dry run asks no real judge
    assert "<!DOCTYPE html>" in (tmp_path / "r.html").read_text()


def test_the_deliberate_regression_exits_1_and_lists_the_diff() -> None:
    done = agentensemble_eval(
        EXAMPLES / "crew_regressed.yaml", DATASET, "--model", "scripted",
        "--baseline", EXAMPLES / "baseline.json",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "Against the baseline: 3 regression(s), 0 improvement(s)" in done.stdout
    assert "regressed: tides (runs passed: 1/1 -> 0/1)" in done.stdout
    assert "3 case(s) regressed against the baseline" in done.stderr


def test_the_checked_in_baseline_still_matches_the_crew() -> None:
    done = agentensemble_eval(
        CREW, DATASET, "--model", "scripted", "--baseline", EXAMPLES / "baseline.json"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Against the baseline: 0 regression(s)" in done.stdout


def test_a_minimum_pass_rate_decides_the_exit_code(tmp_path: Path) -> None:
    dataset = tmp_path / "d.yaml"
    dataset.write_text(
        "cases:\n"
        "  - {name: ok, inputs: {topic: tides}, evaluators: [{Contains: tides}]}\n"
        "  - {name: missing input, inputs: {subject: x}}\n"
        "  - {name: ok too, inputs: {topic: moons}}\n"
    )
    strict = agentensemble_eval(CREW, dataset, "--model", "scripted")
    assert strict.returncode == 1
    assert "pass rate 67% is below 100%" in strict.stderr
    assert "PromptTemplateError" in strict.stdout and "{topic}" in strict.stdout  # that case only
    assert "FAILED: 2/3 cases (67%)" in strict.stdout
    page_path = tmp_path / "r.html"
    lenient = agentensemble_eval(
        CREW, dataset, "--model", "scripted", "--min-pass-rate", "0.6", "--html", page_path
    )
    assert lenient.returncode == 0, lenient.stderr
    # the table and the page agree with the exit code (issue 43: they said FAILED, exit 0)
    assert "PASSED (at least 60% required): 2/3 cases (67%)" in lenient.stdout
    assert "FAILED" not in lenient.stdout
    page = page_path.read_text()
    assert 'class="verdict pass">PASSED (at least 60% required)</span>' in page


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("crew", "BAD"), "dataset.yaml:3: cases[0].input: unknown key in a case"),
        (("MISSING", "dataset"), "missing.yaml: cannot read the file"),
        (("crew", "dataset", "--repeat", "0"), "--repeat and --max-concurrency"),
        (("crew", "dataset", "--min-pass-rate", "1.5"), "--min-pass-rate takes a number from 0"),
        (("crew", "dataset", "--baseline", "NOTREPORT"), "not a saved report"),
        (("crew", "UNKNOWN"), "unknown evaluator 'Contain'. Did you mean Contains?"),
    ],
)
def test_bad_input_exits_2_before_any_run(
    tmp_path: Path, args: tuple[str, ...], words: str
) -> None:
    (tmp_path / "dataset.yaml").write_text("cases:\n  - name: a\n    input: {topic: x}\n")
    (tmp_path / "unknown.yaml").write_text("cases:\n  - name: a\n    evaluators: [Contain]\n")
    (tmp_path / "report.json").write_text('{"cases": "nope"}')
    paths = {
        "crew": CREW,
        "dataset": DATASET,
        "BAD": tmp_path / "dataset.yaml",
        "MISSING": tmp_path / "missing.yaml",
        "NOTREPORT": tmp_path / "report.json",
        "UNKNOWN": tmp_path / "unknown.yaml",
    }
    done = agentensemble_eval(*(paths.get(a, a) for a in args), "--model", "scripted")
    assert done.returncode == 2, done.stdout + done.stderr
    assert words in done.stderr
    assert "Evaluation" not in done.stdout  # nothing ran


def test_a_bad_crew_file_exits_2(tmp_path: Path) -> None:
    crew = tmp_path / "crew.yaml"
    crew.write_text(
        "agents: {a: {role: A, goal: g}}\ntasks:\n  t: {description: d, agent: nobody}\n"
    )
    done = agentensemble_eval(crew, DATASET, "--model", "scripted")
    assert done.returncode == 2
    assert "crew.yaml:3" in done.stderr


def test_json_prints_the_report() -> None:
    done = agentensemble_eval(CREW, DATASET, "--model", "scripted", "--json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["name"] == "research-then-write"


def test_a_terminal_gets_a_progress_bar(tmp_path: Path) -> None:
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "agentensemble", "eval", str(CREW), str(DATASET),
         "--model", "scripted", "--repeat", "3"],
        stdout=subprocess.DEVNULL,
        stderr=secondary,
        env=env(),
        cwd=REPO_ROOT,
    )  # fmt: skip
    os.close(secondary)
    seen = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([primary], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        elif process.poll() is not None:
            break
    os.close(primary)
    assert process.wait(timeout=60) == 0
    text = seen.decode()
    assert "\r[" in text
    assert "] 9/9 runs, 0 failed" in text


def test_a_model_without_its_key_exits_2_before_any_run() -> None:
    done = agentensemble_eval(CREW, DATASET)  # openai/gpt-4o-mini, and no OPENAI_API_KEY
    assert done.returncode == 2, done.stdout + done.stderr
    assert "OPENAI_API_KEY" in done.stderr
    assert "Evaluation" not in done.stdout
