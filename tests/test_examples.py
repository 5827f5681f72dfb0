"""Every script in examples/ runs offline in a fresh Python, exits 0 and says what it did."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import agentensemble

# The checkout whose package this process imported; its examples, run against that package.
REPO_ROOT = Path(agentensemble.__file__).absolute().parent.parent
EXAMPLES = REPO_ROOT / "examples"
OFFLINE = "Offline demo: no API key found, using a scripted model"


@dataclass(frozen=True)
class Run:
    """How to run one example, and lines its output must contain."""

    expected: tuple[str, ...]
    args: tuple[str, ...] = ()
    stdin: str = ""


RUNS = {
    "serve_mcp.py": Run(
        expected=(
            "Tool: crew(topic)",
            "  progress 1/4: task 1/2 started: Research tides and write a brief for the writer.",
            "Result: (scripted answer) Write a short article about tides from the brief.",
            "Without its argument: is_error=True: crew: missing argument(s): topic",
        )
    ),
    "serve_a2a.py": Run(
        expected=(
            "Agent card: crew; skills: research, write",
            "  TASK_STATE_WORKING: task 2/2 done",
            "Artifact: (scripted answer) Write a short article about tides from the brief.",
            "  TASK_STATE_COMPLETED",
            "Through A2AAgent: (scripted answer) Write a short article about volcanoes",
        )
    ),
    "research_writer.py": Run(expected=(OFFLINE, "== Task 2: Writer", "exit: completed")),
    "document_crew.py": Run(
        expected=(
            OFFLINE,
            "(the offline model was sent [document: invoice.pdf, pdf, 737 B, sha256:",
            "(the offline model was sent [image: receipt.png, png, 116 B, sha256:",
            "Invoice: Invoice(number='2041', supplier='Harbour Office Supplies', total=118.0,",
            "Check: The receipt matches invoice 2041: 118.00 EUR paid.",
        )
    ),
    "streaming_chat.py": Run(
        expected=(
            OFFLINE,
            "Guide: [looked up opening_hours] The pool opens at 7:00 and closes at 21:00",
            "cost in USD: unknown",
            'Slowest tool: opening_hours({"place": "pool"}) -> 7:00-21:00',
            "Trace saved and loaded back: True",
        )
    ),
    "support_memory.py": Run(
        expected=(
            OFFLINE,
            "Agent: Sorry about the leak, Ada. I opened a replacement request for order 1042.",
            "Agent: Welcome back, Ada. A replacement for order 1042 was approved",
            "Memory shown: 2 entr(y/ies), 1 earlier exchange(s) of the session",
            "(day 2 ran in a new process on the same memory file)",
            "Entries remembered for Ada: 3",
        )
    ),
    "tool_pipeline.py": Run(expected=(OFFLINE, "Invoice: Subtotal 14.00 + tax 2.80 = total 16.80")),
    "mcp_tools.py": Run(
        expected=(
            OFFLINE,
            'Tool call: geo_distance_km({"from_city": "Paris", "to_city": "Tokyo"}) -> 9712',
            "Paris to Tokyo is 9712 km (about 6035 miles).",
        )
    ),
    "writer_critic.py": Run(
        expected=(
            OFFLINE,
            "Round 1: Rain taps the window",
            "  critic: approved=False; No season word",
            "Round 2: Autumn rain taps glass",
            "Rounds: 2; stopped by: until",
        )
    ),
    "long_research.py": Run(
        expected=(
            OFFLINE,
            "The index: Error: tool 'archive_index' timed out after 0.5 s",
            "Pages read: 6",  # page 2 failed once and was read again (retries)
            "old tool results shortened",
            "Answer: Read all 6 pages: the highest water recorded is 4.59 m.",
        )
    ),
    "budget_loop.py": Run(
        expected=(
            OFFLINE,
            "Stopped by the budget: model_calls used 7 of 7",
            "Rounds finished before the stop: 3",
        )
    ),
    "support_graph.py": Run(
        expected=(
            OFFLINE,
            "Path: triage -> research -> answer -> research -> answer (end)",
            "Answer: Your refund reaches your card within 5 business days.",
        )
    ),
    "parallel_research.py": Run(
        expected=(
            OFFLINE,
            "== history (History researcher)",
            "== overview (Writer)\nTides have been charted for eight centuries.",
            "Tasks: 4; exit: completed",
        )
    ),
    "manager_team.py": Run(
        expected=(
            OFFLINE,
            "== Delegation 1: Researcher\nTwo high tides a day",
            "== Delegation 2: Writer",
            "Final answer: Tides rise twice a day",
            "Delegations: 2; exit: completed",
        )
    ),
    "durable_review.py": Run(
        expected=(
            OFFLINE,
            "Review waiting: 'We ship the new release on Monday.'",
            "Worker killed while the review waits",
            "A new worker resumed the run; reviews on the server: 1,",
            "  Published: We ship on Tuesday.",
            "Exit: completed",
        )
    ),
    "console_review.py": Run(
        stdin="c\nc\n",  # approve the tool call, then accept the report
        expected=(
            OFFLINE,
            "REVIEW REQUESTED: a tool call needs approval",
            "REVIEW REQUESTED: the task has finished",
            "Report: Cleanup done. Deleted 3 file(s), 1640 kB freed",
            "Files left: /var/log/app/app.log",
            "Exit: completed",
        ),
    ),
    "web_review.py": Run(
        args=("--auto-approve",),
        expected=(
            OFFLINE,
            "Web console: http://127.0.0.1:",
            "[auto-approve] approved the review of tool call delete_files",
            "[auto-approve] approved the review of task output",
            "Report: Cleanup done. Deleted 3 file(s), 1640 kB freed",
            "Exit: completed",
        ),
    ),
    "webhook_review.py": Run(
        args=("--auto-approve",),
        expected=(
            OFFLINE,
            "Review page: http://127.0.0.1:",
            "[auto-approve] approved the review of tool call delete_files",
            "[auto-approve] approved the review of task output",
            "Report: Cleanup done. Deleted 3 file(s), 1640 kB freed",
            "Exit: completed",
        ),
    ),
    "skills_agent.py": Run(
        expected=(
            OFFLINE,
            'Tool call: load_skill({"name": "expense-policy"})',
            'Tool call: read_skill_file({"name": "expense-policy", "path": "references/limits.md"',
            "Dinner 62 EUR: OVER by 12 EUR (meals up to 50 EUR)",
            "Reimbursable: 215 EUR",
        )
    ),
}


def offline_env() -> dict[str, str]:
    """This environment without any model credentials, this checkout first on the path."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("OPENAI_API_KEY", "AGENTENSEMBLE_MODEL")
    }
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def test_every_example_has_an_expectation() -> None:
    scripts = [p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_")]
    assert sorted(scripts) == sorted(RUNS)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_example_runs_offline(name: str) -> None:
    run = RUNS[name]
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *run.args],
        input=run.stdin,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        env=offline_env(),
    )
    assert done.returncode == 0, f"stdout={done.stdout!r}\nstderr={done.stderr!r}"
    for line in run.expected:
        assert line in done.stdout, f"{line!r} missing from the output of {name}:\n{done.stdout}"


def test_console_example_rejects_on_end_of_input() -> None:
    """No answers at all: the tool call is rejected and nothing is deleted (fails closed)."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "console_review.py")],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        env=offline_env(),
    )
    assert done.returncode == 0, done.stderr
    assert "Error: Rejected by reviewer: Review got no answer: end of input" in done.stdout
    assert "Files left: /var/log/app/app.log, /var/log/app/app.log.1" in done.stdout
    assert "Exit: timeout" in done.stdout
