"""Attachments in a durable run: a Document run input and a tool's Image are checkpointed with
the run (pickled whole, bounded by MAX_ATTACHMENT_BYTES) and the run completes; the model is
sent both."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from agentensemble import Image
from agentensemble.durable._steps import checkpointable
from agentensemble.tools.base import as_tool_result

APP = Path(__file__).with_name("_attachments_app.py")


def test_a_durable_run_takes_an_input_document_and_a_tool_s_image(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    done = subprocess.run(
        [sys.executable, str(APP), db, "check-1"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout.strip().splitlines()[-1])
    assert output["raw"] == "Invoice 7 is paid."
    assert output["tool"] == "[attachment: image]"
    first, second = output["sent"]
    assert first == [first[0]] and first[0].startswith("[document: invoice, pdf, ")
    assert second[0] == first[0] and second[1].startswith("[image: png, 10 kB, sha256:")


def test_a_tool_result_with_attachments_is_checkpointed_as_it_is() -> None:
    result = as_tool_result(["scan:", Image(data=b"\x89PNG\r\n\x1a\n" + bytes(8))])
    assert checkpointable(result, "tool:scan") is result
