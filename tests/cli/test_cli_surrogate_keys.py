"""``--json`` shows an output whose parsed model holds a lone surrogate in a dict key (pydantic
cannot dump that model as JSON): cleaned as when the output is saved, not a crash."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from agentensemble import TaskOutput
from agentensemble.cli._common import output_json


class Listing(BaseModel):
    files: dict[Any, Any]


def test_a_parsed_model_with_a_surrogate_key_is_shown_as_json() -> None:
    parsed = Listing(files={"caf\udce9.txt": 3})
    for value in (parsed, [parsed]):
        output = TaskOutput(raw="done", parsed=value, task_description="t", agent_role="r")
        shown = output_json(output)
        expected = {"files": {"caf\ufffd.txt": 3}}
        assert shown["parsed"] == (expected if value is parsed else [expected])
        json.dumps(shown, ensure_ascii=False).encode("utf-8")  # no lone surrogate left
