"""Typed task output: the schema the model is asked for, and the parser for its answer.

Any type pydantic can validate works as an ``output_type``: models, dataclasses, ``list[Item]``,
``int``, ``str``, ``Literal[...]``. A type whose JSON schema is not an object is wrapped as
``{"result": <value>}`` (native structured output needs an object at the root); the parser
accepts the wrapped and the bare form alike.
"""

from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agentensemble._dataclass import dataclass
from agentensemble.errors import OutputParsingError, UntrustedInputError
from agentensemble.llm.response_format import ResponseFormat
from agentensemble.untrusted import parse_json

if TYPE_CHECKING:
    from pydantic import TypeAdapter

DEFAULT_OUTPUT_RETRIES = 2
MAX_ANSWER_CHARS = 2_000_000
_FENCE = "```"
_QUALIFIED = re.compile(r"\b(?:[A-Za-z_][\w]*\.)+([A-Za-z_]\w*)")
WRAP_KEY = "result"


@dataclass(frozen=True)
class OutputSpec:
    """One output type, ready to use: its validator, its JSON schema, whether it is wrapped."""

    output_type: Any
    adapter: TypeAdapter[Any]
    schema: dict[str, Any]
    wrapped: bool

    @property
    def name(self) -> str:
        return type_name(self.output_type)


def type_name(output_type: Any) -> str:
    """``Report``, ``list[Item]``, ``Literal['a', 'b']``: a type as a reader writes it."""
    if isinstance(output_type, type) and not getattr(output_type, "__args__", None):
        return output_type.__name__
    return _QUALIFIED.sub(r"\1", str(output_type)).replace("typing.", "")


def _build(output_type: Any) -> OutputSpec:
    from pydantic import TypeAdapter  # pydantic.type_adapter: for typed outputs only

    adapter: TypeAdapter[Any] = TypeAdapter(output_type)
    schema = adapter.json_schema()
    if schema.get("type") == "object":
        return OutputSpec(output_type, adapter, schema, wrapped=False)
    definitions = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {WRAP_KEY: schema},
        "required": [WRAP_KEY],
    }
    if definitions:
        wrapped["$defs"] = definitions
    return OutputSpec(output_type, adapter, wrapped, wrapped=True)


@functools.lru_cache(maxsize=256)
def _cached(output_type: Any) -> OutputSpec:
    return _build(output_type)


def output_spec(output_type: Any) -> OutputSpec:
    """The spec for ``output_type``; raises (TypeError, pydantic errors) for unusable types."""
    if isinstance(output_type, OutputSpec):
        return output_type
    try:
        return _cached(output_type)
    except TypeError:  # unhashable type form: build without the cache
        return _build(output_type)


def output_instructions(output_type: Any) -> str:
    """The prompt section asking for JSON that matches the output type's schema."""
    spec = output_spec(output_type)
    schema = json.dumps(spec.schema, separators=(",", ":"))  # indentation is tokens too
    return f"## Output Format\nReply with only a JSON object matching this JSON schema:\n{schema}"


def response_format(output_type: Any) -> ResponseFormat:
    """The native ``response_format`` for the output type."""
    spec = output_spec(output_type)
    return ResponseFormat(name=spec.name, schema=spec.schema)


def _fenced(text: str) -> str | None:
    """The body of the first code fence (an optional ``json`` tag dropped), or None. Found with
    ``str.find``: linear, whatever follows the opening fence (a backtracking regex took minutes
    on a fence followed by 300,000 spaces)."""
    start = text.find(_FENCE)
    if start == -1:
        return None
    start += len(_FENCE)
    end = text.find(_FENCE, start)
    if end == -1:
        return None
    body = text[start:end]
    if body[:4] in ("json", "JSON"):
        body = body[4:]
    return body.strip()


def _candidates(text: str) -> list[str]:
    stripped = text.strip()
    found = [stripped]
    fenced = _fenced(text)
    if fenced is not None:
        found.append(fenced)
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = text.find(opener), text.rfind(closer)
        if start != -1 and end > start:
            found.append(text[start : end + 1])
    return list(dict.fromkeys(found))


def _problems(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
        for err in error.errors()
    )


def parse_output(text: str, output_type: Any) -> Any:
    """Parse the model's answer into ``output_type``; tolerant of fences and surrounding prose.

    The answer is untrusted input: parsed linearly, bounded in size and depth
    (``agentensemble.untrusted``); every failure is an OutputParsingError, which the executor
    turns into a correction turn.
    """
    spec = output_spec(output_type)
    first_error: ValidationError | None = None
    unusable: UntrustedInputError | None = None
    if len(text) > MAX_ANSWER_CHARS:
        raise OutputParsingError(
            f"Answer does not match {spec.name}: the answer is too large ({len(text)} "
            f"characters; at most {MAX_ANSWER_CHARS})",
            raw=text,
        )
    for candidate in _candidates(text):
        try:
            value = parse_json(candidate, what="the answer", max_chars=MAX_ANSWER_CHARS)
        except UntrustedInputError as exc:
            if not exc.reason.startswith("not valid JSON"):
                unusable = unusable or exc  # too deep, a giant number: say so, not "no JSON"
            continue
        if spec.wrapped and isinstance(value, dict) and set(value) == {WRAP_KEY}:
            value = value[WRAP_KEY]
        try:
            return spec.adapter.validate_python(value)
        except ValidationError as exc:
            first_error = first_error or exc
    if spec.wrapped and first_error is None:  # a bare scalar such as 42, yes or plain text
        try:
            return spec.adapter.validate_python(text.strip())
        except ValidationError as exc:
            first_error = exc
    if first_error:
        problems = _problems(first_error)
    elif unusable:
        problems = f"(root): {unusable}"
    else:
        problems = "(root): the answer holds no JSON"
    raise OutputParsingError(f"Answer does not match {spec.name}: {problems}", raw=text)


def correction_message(error: OutputParsingError) -> str:
    """What the model is told when its structured answer did not parse."""
    return (
        f"Your answer could not be used: {error}. Reply again with only the corrected JSON object."
    )


__all__ = [
    "DEFAULT_OUTPUT_RETRIES",
    "OutputSpec",
    "correction_message",
    "output_instructions",
    "output_spec",
    "parse_output",
    "response_format",
    "type_name",
]
