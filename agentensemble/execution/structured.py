"""Typed task output: the schema the model is asked for, and the parser for its answer.

Any type pydantic can validate works as an ``output_type``: models, dataclasses, ``list[Item]``,
``int``, ``str``, ``Literal[...]``. A type whose JSON schema is not an object is wrapped as
``{"result": <value>}`` (native structured output needs an object at the root); the parser
accepts the wrapped and the bare form alike.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import typing
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import ValidationError

from agentensemble._base.dataclass import dataclass
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


_NUMBER_CHARS = "-+0123456789.eE"
_BEFORE_A_VALUE = frozenset(":[,")
_MAX_DIGITS = 4300  # Python's own limit for int(text): a longer digit run is no partial
_PARTIAL_OPENERS = "{["


class PartialParser:
    """The validated partial of a typed answer as its JSON streams in (``PartialOutput``).

    ``feed(piece)`` adds text and returns the partial when it changed, else None. The partial of
    a model, dataclass or TypedDict is a ``dict`` of the fields so far by field name, each value
    validated against its field's type and constraints (field validators run on the final output
    only); a field shows once its value validates, and a text field grows as it streams. The
    partial of a list or dict is pydantic's partial validation of it (whole items so far).
    Scalars (``int``, ``str``, ``Literal``) have no partial: the final output is the value.
    Parsing is pydantic's partial JSON (``pydantic_core.from_json(allow_partial=...)``); the
    text is re-parsed once it grew by a 32nd, so a long answer costs linear time, not quadratic.
    """

    def __init__(self, output_type: Any) -> None:
        self.spec = output_spec(output_type)
        try:
            self._fields = _cached_fields(self.spec.output_type)
        except TypeError:  # unhashable type form
            self._fields = _field_adapters(self.spec.output_type)
        self._pieces: list[str] = []
        self._length = 0
        self._parsed_at = 0
        self._last: Any = None

    @property
    def streams(self) -> bool:
        """Whether this type has partials at all (objects and arrays; not scalars)."""
        if not self.spec.wrapped:
            return True
        inner = self.spec.schema["properties"][WRAP_KEY]
        return inner.get("type") in ("array", "object") or "$ref" in inner

    def restart(self) -> None:
        """The stream starts over (a broken stream retried): forget the text so far."""
        self._pieces, self._length, self._parsed_at, self._last = [], 0, 0, None

    def feed(self, piece: str) -> Any:
        """Add ``piece``; the new partial when it differs from the last one, else None."""
        self._pieces.append(piece)  # joined only to parse: += on an attribute copies each time
        self._length += len(piece)
        if self._length - self._parsed_at < self._length // 32:
            return None
        return self.flush()

    def flush(self) -> Any:
        """Parse all the text so far (the stream ended): the partial if it changed, else None."""
        if self._parsed_at == self._length or self._length > MAX_ANSWER_CHARS:
            return None
        self._parsed_at = self._length
        text = "".join(self._pieces)
        self._pieces = [text]
        partial = self._partial(text)
        if partial is None or partial == self._last:
            return None
        self._last = partial
        return partial

    def _partial(self, answer: str) -> Any:
        from pydantic_core import from_json

        start = min((i for i in map(answer.find, _PARTIAL_OPENERS) if i != -1), default=-1)
        if start == -1:
            return None
        text = _without_number_tail(answer[start:].rstrip())
        if _GIANT_NUMBER.search(text):
            return None  # a number Python would refuse to convert: the final parse says so
        try:
            value = from_json(text, allow_partial="trailing-strings")
        except ValueError:
            return None  # prose after the JSON, a broken token: wait for more
        if self.spec.wrapped and isinstance(value, dict):
            if set(value) - {WRAP_KEY}:
                return None
            if WRAP_KEY not in value:
                return None
            value = value[WRAP_KEY]
        if self._fields is not None:
            return _fields_so_far(value, self._fields) or None
        try:
            partial = self.spec.adapter.validate_python(value, experimental_allow_partial=True)
        except ValidationError:
            return None
        return partial if partial else None


_GIANT_NUMBER = re.compile(rf"[0-9]{{{_MAX_DIGITS + 1}}}")


def _without_number_tail(text: str) -> str:
    """``text`` without a number it ends in (``"score": 1`` may go on as ``12``); linear
    (``str.rstrip``: a regex anchored at the end rescans a long digit run from every position)."""
    kept = text.rstrip(_NUMBER_CHARS)
    if len(kept) == len(text) or kept.rstrip()[-1:] not in _BEFORE_A_VALUE:
        return text  # no number at the end (a word, a string that ends in "e")
    return kept


def _field_adapters(output_type: Any) -> dict[str, tuple[str, TypeAdapter[Any]]] | None:
    """For a model, dataclass or TypedDict: each field's JSON key and validator, by field name
    (None for other types). Built once per parser."""
    from pydantic import BaseModel, TypeAdapter
    from typing_extensions import is_typeddict  # typing's misses typing_extensions' TypedDict

    fields: dict[str, tuple[str, Any]] = {}
    if isinstance(output_type, type) and issubclass(output_type, BaseModel):
        for name, info in output_type.model_fields.items():
            key = info.validation_alias if isinstance(info.validation_alias, str) else info.alias
            hint: Any = info.annotation
            if info.metadata:  # its constraints (gt=0, max_length=...) go with it
                args = (hint, *info.metadata)
                hint = typing.cast(Any, Annotated)[args]
            fields[name] = (key or name, hint)
    elif isinstance(output_type, type) and (
        dataclasses.is_dataclass(output_type) or is_typeddict(output_type)
    ):
        for name, hint in typing.get_type_hints(output_type, include_extras=True).items():
            fields[name] = (name, hint)
    else:
        return None
    return {name: (key, TypeAdapter(hint)) for name, (key, hint) in fields.items()}


_cached_fields = functools.lru_cache(maxsize=256)(_field_adapters)


def _fields_so_far(value: Any, fields: dict[str, tuple[str, TypeAdapter[Any]]]) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {}
    shown: dict[str, Any] = {}
    for name, (key, adapter) in fields.items():
        if key in value:
            try:
                shown[name] = adapter.validate_python(value[key], experimental_allow_partial=True)
            except ValidationError:
                continue  # not valid yet (a nested model half-way): shown once it is
    return shown


def correction_message(error: OutputParsingError) -> str:
    """What the model is told when its structured answer did not parse."""
    return (
        f"Your answer could not be used: {error}. Reply again with only the corrected JSON object."
    )


__all__ = [
    "DEFAULT_OUTPUT_RETRIES",
    "OutputSpec",
    "PartialParser",
    "correction_message",
    "output_instructions",
    "output_spec",
    "parse_output",
    "response_format",
    "type_name",
]
