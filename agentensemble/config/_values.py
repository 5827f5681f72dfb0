"""Reading values of a crew file: the helpers every section uses (known keys, lists, names,
model construction with errors at the key) and the values that name Python objects (tools,
import paths, output types, task reviews)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from agentensemble.config._crew_imports import current_crew_folder, importable_crew_folder
from agentensemble.config._crew_paths import in_crew_folder
from agentensemble.config._positions import Located, Path
from agentensemble.config._refs import BadReference, build_tool, builtin_tool, import_object
from agentensemble.errors import ConfigurationError
from agentensemble.hints import ENDPOINT_SETTINGS, FOREIGN_NAMES, MODEL_SETTINGS
from agentensemble.tools.resolver import ToolResolver

_SCALARS: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool}


def entries(doc: Located, path: Path, section: Any) -> list[tuple[str, Path, Mapping[str, Any]]]:
    """(name, path, spec) for a section given as a mapping by name, or as a list."""
    if isinstance(section, Mapping):
        items = [(str(name), (*path, str(name)), spec) for name, spec in section.items()]
    elif isinstance(section, list):
        items = []
        for index, spec in enumerate(section):
            name = spec.get("name") if isinstance(spec, Mapping) else None
            items.append((str(name) if name else "", (*path, index), spec))
    else:
        raise doc.error(path, "expected a mapping of names to entries, or a list of entries")
    for _, where, spec in items:
        if not isinstance(spec, Mapping):
            raise doc.error(where, f"expected a mapping of settings, got {kind_of(spec)}")
    return items


def tools_from(doc: Located, path: Path, value: Any) -> list[Any]:
    tools: list[Any] = []
    for index, item in enumerate(as_list(doc, path, value or [])):
        where = (*path, index)
        if isinstance(item, Mapping) and len(item) == 1:
            ((reference, arguments),) = item.items()
            if arguments is not None and not isinstance(arguments, Mapping):
                raise doc.error(where, f"the arguments of {reference!r} must be a mapping")
        elif isinstance(item, str):
            reference, arguments = item, None
        else:
            raise doc.error(
                where, "a tool is a name, an import path package.module:name, or {name: {args}}"
            )
        try:
            made = _made_tool(str(reference), dict(arguments or {}))
            ToolResolver().resolve([made])  # one entry at a time: errors name their line
        except (BadReference, ConfigurationError) as error:
            raise doc.error(where, str(error)) from None
        tools.append(made)
    return tools


def _made_tool(reference: str, arguments: dict[str, Any]) -> Any:
    """An import path is imported with the crew folder on ``sys.path``; a built-in tool name
    without it (an ``html.py`` beside the crew must not shadow the standard library). A class's
    relative path arguments are the crew file's folder's, not the working directory's
    (``_crew_paths``)."""
    if ":" in reference:
        with importable_crew_folder():
            target = import_object(reference)
    else:
        target = builtin_tool(reference)
    folder = current_crew_folder()
    if folder is not None and isinstance(target, type):
        arguments = in_crew_folder(target, arguments, folder)
    return build_tool(reference, target, arguments)


def imported(doc: Located, path: Path, reference: Any) -> Any:
    if not isinstance(reference, str):
        raise doc.error(
            path, f"expected an import path package.module:name, got {kind_of(reference)}"
        )
    try:
        with importable_crew_folder():
            return import_object(reference)
    except BadReference as error:
        raise doc.error(path, str(error)) from None


def output_type_ref(doc: Located, path: Path, reference: Any) -> Any:
    if isinstance(reference, str) and reference in _SCALARS:
        return _SCALARS[reference]
    return imported(doc, path, reference)


def task_review(doc: Located, path: Path, value: Any) -> Any:
    from agentensemble_review import Review  # only when the file asks for a review

    if value in ("required", True):
        return Review.required()
    if value in ("skip", False):
        return Review.skip()
    if isinstance(value, Mapping):
        known_keys(doc, path, value, ("prompt", "timeout", "on_timeout"), "Review")
        return construct(doc, path, Review.required, dict(value))
    raise doc.error(path, "expected required, skip or {prompt, timeout, on_timeout}")


#: Model settings written beside an agent's or a task's settings, with the crew file's fix.
_MODEL_SETTING_IN_FILE = (
    "{name} is a setting of the model: write the model as a mapping, "
    "`llm: {model: openai/gpt-4o-mini, {name}: ...}` (on the agent; `model:` at the top level)"
)


def known_keys(doc: Located, path: Path, spec: Mapping[str, Any], known: Any, what: str) -> None:
    foreign = {
        **FOREIGN_NAMES.get(what, {}),
        **{name: _MODEL_SETTING_IN_FILE for name in (*MODEL_SETTINGS, *ENDPOINT_SETTINGS)},
    }
    for key in spec:
        if key in known:
            continue
        hint = foreign.get(str(key))
        advice = hint.replace("{name}", str(key)) if hint else f"known keys: {', '.join(known)}"
        raise doc.error((*path, str(key)), f"{what} has no setting {key!r}: {advice}")


def as_list(doc: Located, path: Path, value: Any) -> list[Any]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise doc.error(path, f"expected a list, got {kind_of(value)}")
    return value


def lookup(doc: Located, path: Path, ref: Any, known: Mapping[str, Any], what: str) -> Any:
    if isinstance(ref, str) and ref in known:
        return known[ref]
    names = ", ".join(known) or "none"
    raise doc.error(path, f"unknown {what} {ref!r} (known: {names})")


def construct(
    doc: Located, path: Path, factory: Any, fields: dict[str, Any], whole: Path | None = None
) -> Any:
    """Build a model; its validation errors point at the key that caused them (at ``whole``,
    if given, for an error about the model as a whole)."""
    where = path if whole is None else whole
    try:
        return factory(**fields)
    except ValidationError as error:
        first = error.errors()[0]
        loc = tuple(p for p in first["loc"] if isinstance(p, str | int))
        message = _unquoted_variable(first) or str(first["msg"]).removeprefix("Value error, ")
        raise doc.error((*path, *loc) if loc else where, message) from None
    except (ConfigurationError, TypeError) as error:
        raise doc.error(where, str(error)) from None


def _unquoted_variable(error: Any) -> str | None:
    """``goal: {topic}`` is YAML for the mapping ``{topic: null}``, not text: say so."""
    value = error.get("input")
    if error.get("type") != "string_type" or not isinstance(value, Mapping) or not value:
        return None
    if any(item is not None for item in value.values()):
        return None
    shown = "{" + ", ".join(str(key) for key in value) + "}"
    return f'{shown} was read as a YAML mapping, not text: quote the value ("{shown}")'


def kind_of(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return "text" if isinstance(value, str) else type(value).__name__


__all__ = [
    "as_list",
    "construct",
    "entries",
    "imported",
    "kind_of",
    "known_keys",
    "lookup",
    "output_type_ref",
    "task_review",
    "tools_from",
]
