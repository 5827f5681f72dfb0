"""Typed task output: the schema instruction for the model and the parser for its answer."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from agentensemble.errors import OutputParsingError

MAX_CORRECTIONS = 2
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)


def output_instructions(output_type: type[BaseModel]) -> str:
    """The prompt section asking for JSON that matches ``output_type``'s schema."""
    schema = json.dumps(output_type.model_json_schema(), indent=2)
    return (
        "## Output Format\n"
        "Reply with only a JSON object (no prose, no code fence) that conforms to this "
        f"JSON schema:\n{schema}"
    )


def _json_candidate(text: str) -> str:
    fenced = _FENCE.search(text)
    if fenced:
        return fenced.group(1).strip()
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        return text[start : end + 1]
    return text.strip()


def parse_output(text: str, output_type: type[BaseModel]) -> Any:
    """Parse the model's answer into ``output_type``; tolerant of fences and surrounding prose."""
    try:
        return output_type.model_validate_json(_json_candidate(text))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise OutputParsingError(
            f"Answer does not match {output_type.__name__}: {problems}", raw=text
        ) from exc


def correction_message(error: OutputParsingError) -> str:
    """What the model is told when its structured answer did not parse."""
    return (
        f"Your answer could not be used: {error}. Reply again with only the corrected JSON object."
    )


__all__ = ["MAX_CORRECTIONS", "correction_message", "output_instructions", "parse_output"]
