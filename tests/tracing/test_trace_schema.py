"""The trace's JSON Schema is exported to docs/trace.schema.json, so schema changes show up in
review. Regenerate after changing agentensemble/trace_model.py:

    AGENTENSEMBLE_WRITE_SCHEMA=1 .venv/bin/python -m pytest tests/tracing/test_trace_schema.py
"""

from __future__ import annotations

import json
import os

import agentensemble
from agentensemble import ExecutionTrace
from agentensemble.tracing import SCHEMA_VERSION

SCHEMA_FILE = (
    os.path.dirname(os.path.dirname(os.path.abspath(agentensemble.__file__)))
    + "/docs/trace.schema.json"
)


def current_schema() -> str:
    schema = ExecutionTrace.model_json_schema()
    schema["$comment"] = f"agentensemble ExecutionTrace, schema_version {SCHEMA_VERSION}"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def test_the_exported_schema_file_matches_the_trace_model() -> None:
    if os.environ.get("AGENTENSEMBLE_WRITE_SCHEMA") == "1":
        with open(SCHEMA_FILE, "w", encoding="utf-8") as file:
            file.write(current_schema())
    with open(SCHEMA_FILE, encoding="utf-8") as file:
        exported = file.read()
    assert exported == current_schema(), (
        "docs/trace.schema.json is out of date with agentensemble/trace_model.py. "
        "Regenerate it with: AGENTENSEMBLE_WRITE_SCHEMA=1 .venv/bin/python -m pytest "
        "tests/tracing/test_trace_schema.py (and bump SCHEMA_VERSION if a field was removed "
        "or changed meaning)"
    )
