"""JSON schemas for tool arguments, from function signatures or pydantic models, and argument
validation with messages a model can act on. Pure functions.

Schemas are pydantic's JSON schema, cleaned for function calling: ``title`` noise removed,
``type: object`` at the top, ``required`` listing parameters without defaults, and
``additionalProperties: false`` for function signatures. Nested models stay as ``$defs`` /
``$ref`` (OpenAI accepts them; they keep recursive models finite and schemas small).
"""

from __future__ import annotations

import inspect
import operator
import re
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from agentensemble._base.dataclass import dataclass
from agentensemble.errors import ConfigurationError, ToolArgumentsError, UntrustedInputError
from agentensemble.untrusted import DuplicateKeyError, parse_json

_SKIPPED_FIRST_PARAMETERS = ("self", "cls")
_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters|"
    r"Returns|Return|Yields|Yield|Raises|Raise|Examples|Example|Notes|Note|Attributes|"
    r"See Also|References|Todo|Warnings|Warning|Warns)\s*:\s*$"
)
_ARGS_SECTIONS = {
    "Args",
    "Arguments",
    "Parameters",
    "Params",
    "Keyword Args",
    "Keyword Arguments",
    "Other Parameters",
}
_PARAM_LINE = re.compile(r"^\*{0,2}(?P<name>\w+)\s*(\([^)]*\))?\s*:\s*(?P<text>.*)$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(?P<name>\w+)\s*:\s*(?P<text>.*)$")
# Keys whose value is a map of name -> subschema, a subschema, or a list of subschemas.
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SCHEMA_VALUES = (
    "items",
    "additionalProperties",
    "not",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
)
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


@dataclass(frozen=True)
class Docstring:
    """A docstring split into the description and the per-parameter texts."""

    description: str
    params: Mapping[str, str]


def parse_docstring(doc: str | None) -> Docstring:
    """Split a Google-style docstring (``Args:`` section; ``:param x:`` lines also work).

    The description is the prose before the first section (summary and any further
    paragraphs), whitespace kept as written; parameter texts are joined into one line each.
    """
    if not doc:
        return Docstring("", {})
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    indents: dict[str, int] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        header = _SECTION.match(line)
        if header:
            section, current = header.group(1), None
            continue
        sphinx = _SPHINX_PARAM.match(stripped)
        if sphinx:
            section, current = "Args", sphinx.group("name")
            params[current] = sphinx.group("text").strip()
            continue
        if stripped.startswith(":"):  # other reST fields (:returns:, :raises ...:)
            section, current = "Fields", None
            continue
        if section is None:
            description.append(line)
            continue
        if section not in _ARGS_SECTIONS:
            continue
        if not stripped:
            current = None
            continue
        indent = len(line) - len(line.lstrip())
        match = _PARAM_LINE.match(stripped)
        if match and (current is None or indent <= indents.get(current, 0)):
            current = match.group("name")
            params[current] = match.group("text").strip()
            indents[current] = indent
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return Docstring("\n".join(description).strip(), params)


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Remove pydantic's ``title`` entries from a JSON schema, keeping property names, defaults
    and enum values intact (a property may well be called "title").
    """
    cleaned: dict[str, Any] = _clean(schema)
    return cleaned


def _clean(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    cleaned: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            cleaned[key] = {name: _clean(sub) for name, sub in value.items()}
        elif key in _SCHEMA_VALUES:
            cleaned[key] = _clean(value)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            cleaned[key] = [_clean(sub) for sub in value]
        else:
            cleaned[key] = value
    return cleaned


def model_parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The function-calling ``parameters`` schema of a pydantic model (titles removed)."""
    schema = clean_schema(model.model_json_schema())
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


@dataclass(frozen=True)
class _Parameter:
    name: str
    field: str
    positional_only: bool


@dataclass(frozen=True)
class FunctionSchema:
    """Everything needed to describe a function to a model and call it with validated args."""

    description: str
    parameters: dict[str, Any]
    model: type[BaseModel]
    _params: tuple[_Parameter, ...]
    skips_first: bool

    def call_arguments(self, validated: BaseModel) -> tuple[list[Any], dict[str, Any]]:
        """Positional and keyword arguments for the function, from validated arguments."""
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for param in self._params:
            value = getattr(validated, param.field)
            if param.positional_only:
                args.append(value)
            else:
                kwargs[param.name] = value
        return args, kwargs


def function_schema(fn: Callable[..., Any], *, name: str | None = None) -> FunctionSchema:
    """Build the argument schema and validation model of ``fn`` from its signature.

    Supported: str/int/float/bool, lists, dicts, Enum, Literal, Optional, defaults (not
    required), nested pydantic models, ``Annotated[T, "description"]`` and
    ``Annotated[T, Field(description=...)]``; parameter descriptions also come from the
    docstring's ``Args:`` section. A leading ``self``/``cls`` is skipped; ``*args`` and
    ``**kwargs`` are rejected (a model cannot fill them reliably).
    """
    label = name or getattr(fn, "__name__", repr(fn))
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise ConfigurationError(
            f"Cannot read the type hints of tool '{label}': {exc}. Types used in annotations "
            "must be importable from the function's module."
        ) from exc
    docstring = parse_docstring(inspect.getdoc(fn))
    parameters = list(inspect.signature(fn).parameters.values())
    skips_first = bool(parameters) and parameters[0].name in _SKIPPED_FIRST_PARAMETERS
    if skips_first:
        parameters = parameters[1:]
    fields: dict[str, Any] = {}
    bindings: list[_Parameter] = []
    for index, param in enumerate(parameters):
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ConfigurationError(
                f"Tool '{label}' has *{param.name}/**{param.name}: tools need named "
                "parameters the model can fill"
            )
        annotation = hints.get(param.name, Any)
        annotation, text = _split_description(annotation)
        description = None  # a Field(description=...) in Annotated wins over everything
        if not _has_field_description(annotation):
            description = text or docstring.params.get(param.name)
        default = ... if param.default is inspect.Parameter.empty else param.default
        field_name = f"p{index}"
        if description:
            annotation = operator.getitem(Annotated, (annotation, Field(description=description)))
        fields[field_name] = (annotation, Field(default, alias=param.name))
        bindings.append(
            _Parameter(param.name, field_name, param.kind is inspect.Parameter.POSITIONAL_ONLY)
        )
    try:
        model: type[BaseModel] = create_model(
            f"{label}_arguments",
            __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **fields,
        )
        parameters_schema = model_parameters_schema(model)
    except Exception as exc:
        raise ConfigurationError(f"Cannot build a JSON schema for tool '{label}': {exc}") from exc
    return FunctionSchema(
        description=docstring.description,
        parameters=parameters_schema,
        model=model,
        _params=tuple(bindings),
        skips_first=skips_first,
    )


def _split_description(annotation: Any) -> tuple[Any, str | None]:
    """Take a plain-string description out of ``Annotated[T, "text", ...]``."""
    if get_origin(annotation) is not Annotated:
        return annotation, None
    base, *metadata = get_args(annotation)
    texts = [item for item in metadata if isinstance(item, str)]
    rest = [item for item in metadata if not isinstance(item, str)]
    if not texts:
        return annotation, None
    rebuilt = operator.getitem(Annotated, (base, *rest)) if rest else base
    return rebuilt, texts[0]


def _has_field_description(annotation: Any) -> bool:
    if get_origin(annotation) is not Annotated:
        return False
    return any(
        isinstance(item, FieldInfo) and item.description for item in get_args(annotation)[1:]
    )


def format_validation_error(error: ValidationError) -> str:
    """One line naming every bad field, e.g. ``b: Input should be a valid integer; c: Field
    required``.
    """
    problems = []
    for item in error.errors(include_url=False):
        location = ".".join(str(part) for part in item["loc"]) or "arguments"
        problems.append(f"{location}: {item['msg']}")
    return "; ".join(problems)


ModelT = typing.TypeVar("ModelT", bound=BaseModel)


def loads_unique(text: str) -> Any:
    """Untrusted JSON that refuses an object naming a key twice, at any depth.

    With ``{"to": "alice", "to": "mallory"}`` a reviewer reading the text and a tool reading the
    parsed value would see different calls; such input is refused (DuplicateKeyError). Size and
    depth are bounded as for all untrusted input (``agentensemble.untrusted``).
    """
    return parse_json(text, what="the JSON", unique_keys=True)


def load_arguments_json(text: str, prefix: str, hint: str) -> Any:
    """A model's JSON arguments, parsed as untrusted input: every failure is a ToolArgumentsError.

    A key named twice in one object is refused: the reviewer and the tool must see one call.
    Input too large, nested too deeply (never a RecursionError) or holding an integer longer
    than Python converts is refused too; none of it may escape a tool call, where it would end
    the run instead of going back to the model.
    """
    try:
        return parse_json(text, what="the arguments", unique_keys=True)
    except DuplicateKeyError as exc:
        raise ToolArgumentsError(
            f"{prefix}: duplicate key {exc.key!r} in a JSON object; send each argument once. {hint}"
        ) from exc
    except UntrustedInputError as exc:
        raise ToolArgumentsError(f"{prefix}: {exc.reason}. {hint}") from exc


def validate_arguments(model: type[ModelT], arguments: str, tool_name: str) -> ModelT:
    """Parse the model's JSON arguments text into ``model``.

    Empty text counts as ``{}`` (some models send that for tools without parameters).
    Raises ToolArgumentsError with a message naming the bad fields.
    """
    prefix = f"Invalid arguments for '{tool_name}'"
    text = arguments.strip() or "{}"
    data = load_arguments_json(text, prefix, "Send the arguments as a JSON object.")
    if not isinstance(data, dict):
        raise ToolArgumentsError(
            f"{prefix}: expected a JSON object of named arguments, got {_json_kind(data)}"
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ToolArgumentsError(f"{prefix}: {format_validation_error(exc)}") from exc


def _json_kind(value: Any) -> str:
    kinds = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(value), "a number")


__all__ = [
    "Docstring",
    "DuplicateKeyError",
    "FunctionSchema",
    "clean_schema",
    "format_validation_error",
    "function_schema",
    "load_arguments_json",
    "loads_unique",
    "model_parameters_schema",
    "parse_docstring",
    "validate_arguments",
]
