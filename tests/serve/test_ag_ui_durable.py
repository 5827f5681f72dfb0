"""ag_ui_app(..., durable=runtime, name=...): every AG-UI run is a durable run of the runtime
(recorded in its database like any durable run), streamed as the same AG-UI events."""

from __future__ import annotations

import json
from pathlib import Path

from _durable_app_common import run_app

APP = "_durable_ag_ui.py"


def test_an_ag_ui_run_is_a_durable_run(tmp_path: Path) -> None:
    lines = run_app(APP, str(tmp_path))
    said = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in lines if " " in line}
    types = json.loads(said["TYPES"])
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED", types
    assert "STEP_STARTED" in types and "TEXT_MESSAGE_CONTENT" in types
    assert said["RESULT"] == "durable ag-ui answer"
    assert said["STATE"] == "completed 1"
    assert said["RUNS"] == "[('explainer', 'SUCCESS')]"
    refused = [line for line in lines if line.startswith("REFUSED")]
    assert "cannot serve 'unregistered' durably" in refused[0]
    assert "review: ag-ui cannot answer a durable run's reviews" in refused[1]
