"""The real AG-UI client from npm (``@ag-ui/client``'s ``HttpAgent``, which checks every event
sequence it receives) drives the AG-UI app over HTTP: a run that ends at an interrupt, then a
resume answering it, from ``tests/serve/ag_ui_client/drive.mjs``.

The client is installed with ``npm ci`` from the committed lock file by ``make npm-clients``
(``.ci/run`` calls it); without it, or without node, the test skips with one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ag_ui_helpers import mail_crew, served

from agentensemble.testing import ScriptedChatModel, tool_call

HARNESS = Path(__file__).parent / "ag_ui_client"
FILES = ("package.json", "package-lock.json", "drive.mjs")
TOKEN = "an-ag-ui-npm-token-long-enough"


def client_folder() -> Path:
    """The harness with its installed ``node_modules`` (``make npm-clients`` installs them from the
    committed lock file; ``$AGENTENSEMBLE_AG_UI_CLIENT_DIR`` names another such folder), or a
    skip: the test run itself installs nothing."""
    if shutil.which("node") is None:
        pytest.skip("node is needed to run the @ag-ui/client test")
    chosen = os.environ.get("AGENTENSEMBLE_AG_UI_CLIENT_DIR")
    folder = Path(chosen) if chosen else HARNESS
    if not (folder / "node_modules" / "@ag-ui" / "client" / "package.json").exists():
        pytest.skip("@ag-ui/client is not installed: make npm-clients installs it")
    if folder != HARNESS:
        for name in FILES:
            shutil.copyfile(HARNESS / name, folder / name)
    return folder


def drive(url: str, payload: dict[str, Any]) -> dict[str, Any]:
    folder = client_folder()
    done = subprocess.run(
        ["node", "drive.mjs", url, json.dumps(payload), TOKEN],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert "failed" not in summary, summary["failed"]
    return summary


ANSWERS = [
    # (what, the resume payload, what the tool returned to the model, the review's status)
    (
        "edit",
        {"approved": True, "editedArgs": {"to": "bob@example.com", "body": "hi"}},
        "sent to bob@example.com: hi",
        "edited",
    ),
    ("approve", {"approved": True}, "sent to ann@example.com: hello", "approved"),
    (
        "reject",
        {"approved": False, "reason": "not now"},
        "Error: Rejected by reviewer: not now",
        "rejected",
    ),
]


@pytest.mark.parametrize(
    ("what", "payload", "seen", "status"), ANSWERS, ids=[a[0] for a in ANSWERS]
)
def test_the_npm_client_runs_to_an_interrupt_and_resumes_with_its_answer(
    what: str, payload: dict[str, Any], seen: str, status: str
) -> None:
    model = ScriptedChatModel(
        [tool_call("send_mail", {"to": "ann@example.com", "body": "hello"}), "Mail handled."]
    )
    with served(lambda: mail_crew(model=model), token=TOKEN) as url:
        summary = drive(url, payload)
    first, second = summary["first"], summary["second"]
    assert first["types"][0] == "RUN_STARTED" and first["types"][-1] == "RUN_FINISHED"
    assert "TOOL_CALL_START" in first["types"] and "STEP_STARTED" in first["types"]
    assert first["finished"][0]["outcome"] == "interrupt"
    [interrupt] = summary["interrupts"]
    assert interrupt["reason"] == "tool_approval" and interrupt["toolCallId"]
    assert second["errors"] == []
    assert second["finished"] == [{"outcome": "success", "result": "Mail handled."}]
    assert "TOOL_CALL_RESULT" in second["types"] and "TEXT_MESSAGE_CONTENT" in second["types"]
    assert summary["pendingAfter"] == 0
    # the client applied our snapshot and JSON patches itself
    assert summary["state"]["status"] == "completed"
    assert summary["state"]["reviews"][0]["status"] == status
    assert summary["state"]["reviews"][0]["decidedBy"] == "token"
    roles = [message["role"] for message in summary["messages"]]
    assert roles[0] == "user" and "tool" in roles and roles[-1] == "assistant"
    assert summary["messages"][-1]["content"] == "Mail handled."
    assert [r for request in model.requests for r in request.tool_results] == [seen]
