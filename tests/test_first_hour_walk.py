"""The README walked as a newcomer does, in fresh processes: its first ensemble saved as a
script beside the clone and run without a key, and the crew file run from another folder. Each
stumble is told what to do in the words of where it happened (Python or the command line)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
WITHOUT_KEYS = {
    k: v
    for k, v in os.environ.items()
    if not k.endswith("_API_KEY") and not k.startswith(("AGENTENSEMBLE_", "OPENAI_"))
}


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(WITHOUT_KEYS, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env
    )


def test_the_readme_s_first_ensemble_without_a_key_says_how_to_run_it_offline(
    tmp_path: Path,
) -> None:
    found = re.search(r"## A first ensemble\n\n```python\n(.*?)```", README, re.DOTALL)
    assert found
    (tmp_path / "agentensemble").mkdir()  # saved in the folder that holds the clone
    (tmp_path / "app.py").write_text(found.group(1))
    done = run("app.py", cwd=tmp_path)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("agentensemble.errors.ModelSettingsError: "), done.stderr
    assert "needs an API key: set OPENAI_API_KEY in the environment" in last
    assert "agentensemble.testing.ScriptedChatModel" in last  # the way to try it offline


def test_the_readme_s_crew_command_without_a_key_says_model_scripted(tmp_path: Path) -> None:
    crew = REPO / "examples" / "crew.yaml"
    done = run("-m", "agentensemble", "run", str(crew), "--input", "topic=AI", cwd=tmp_path)
    assert done.returncode == 2
    assert "--model scripted" in done.stderr and "ScriptedChatModel" not in done.stderr
    offline = run(
        "-m",
        "agentensemble",
        "run",
        str(crew),
        "--input",
        "topic=AI",
        "--model",
        "scripted",
        cwd=tmp_path,
    )
    assert offline.returncode == 0, offline.stderr
    assert "(scripted answer) Write a short article about AI" in offline.stdout
    assert list(tmp_path.iterdir()) == []  # nothing written where it was run
