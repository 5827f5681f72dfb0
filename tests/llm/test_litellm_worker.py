"""Runs through litellm leave stderr quiet at exit: litellm's logging worker, moved from one event
loop to another (a sync ``run()``, then ``asyncio.run(arun())``), used to print "Task was
destroyed but it is pending!" for the worker task it left behind. A real process against the
local OpenAI-compatible server, as a user runs it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import agentensemble
from agentensemble.testing import OpenAICompatibleServer

if importlib.util.find_spec("litellm") is None:  # not imported here: it would phone home
    pytest.skip("litellm is not installed", allow_module_level=True)

REPO_ROOT = Path(agentensemble.__file__).absolute().parent.parent

SCRIPT = """
import asyncio, gc
from agentensemble.config import load_crew

ensemble = load_crew("crew.yaml")
print(ensemble.run().raw)                # on the shared loop
print(asyncio.run(ensemble.arun()).raw)  # on a loop of its own: litellm's worker moves
gc.collect()                             # the worker task left behind is collected here
print(ensemble.run().raw)                # and back
"""


def crew(folder: Path, base_url: str) -> Path:
    path = folder / "crew.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            model: {{model: openai/test-model, api_base: "{base_url}", api_key: sk-test}}
            agents:
              writer: {{role: Writer, goal: Write}}
            tasks:
              - {{description: Say hello, agent: writer}}
            """
        )
    )
    return path


def through_litellm(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, AGENTENSEMBLE_LLM_LANE="litellm", PYTHONPATH=str(REPO_ROOT))
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


@pytest.mark.parametrize(
    "args",
    [["-c", SCRIPT], ["-m", "agentensemble", "run", "crew.yaml"]],
    ids=["run, arun, run in one script", "the run command"],
)
def test_a_process_that_used_litellm_exits_without_pending_task_reports(
    tmp_path: Path, args: list[str]
) -> None:
    with OpenAICompatibleServer() as server:
        server.set_responder(lambda request: "Hello.")
        crew(tmp_path, server.base_url)
        done = through_litellm(args, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Hello." in done.stdout
    assert "Task was destroyed" not in done.stderr
    assert "Traceback" not in done.stderr
    assert "was never awaited" not in done.stderr
