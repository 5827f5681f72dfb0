"""Checking a model's arguments against an MCP server's input schema, with the schema as data.

The schema comes from the server: hostile input. Two of JSON Schema's features would let it act
on the agent's host, so both are contained here:

- ``$ref`` (and ``$dynamicRef``, ``$id``-relative references) resolve only inside the schema
  itself and the bundled metaschemas. jsonschema's default fetches any ``http://`` or
  ``file://`` reference with ``urlopen``, on the event loop, with no timeout: the server could
  make the host fetch a URL, read a local file, or freeze for good. An unresolvable reference
  skips the client-side check (the server validates its own input).
- ``pattern`` and ``patternProperties`` run with the ``regex`` package's timeout
  (``PATTERN_TIMEOUT`` per match) inside a budget for the whole check (``CHECK_BUDGET``); a
  pattern such as ``^(a+)+$`` against model-chosen text would otherwise backtrack for hours. A
  pattern that times out, or that Python cannot compile, counts as matched: the check is skipped,
  never failed, and the server still validates.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping
from typing import Any

PATTERN_TIMEOUT = 0.05
"""Seconds one ``pattern`` match may run before it is abandoned (counted as matched)."""
CHECK_BUDGET = 0.5
"""Seconds all pattern matches of one argument check may take together."""
MAX_ERRORS = 10

_deadline: contextvars.ContextVar[float] = contextvars.ContextVar("mcp_pattern_deadline")


def _search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches in ``text``; True when it cannot be decided in time."""
    import regex

    remaining = min(
        PATTERN_TIMEOUT, _deadline.get(time.monotonic() + CHECK_BUDGET) - time.monotonic()
    )
    if remaining <= 0:
        return True
    try:
        return regex.search(pattern, text, timeout=remaining) is not None
    except (TimeoutError, regex.error, RecursionError, OverflowError):
        return True


def _pattern(
    validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    from jsonschema import ValidationError

    if isinstance(instance, str) and isinstance(pattern, str) and not _search(pattern, instance):
        yield ValidationError(f"{instance[:100]!r} does not match {pattern[:100]!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    if not isinstance(instance, dict) or not isinstance(patterns, Mapping):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if isinstance(key, str) and _search(str(pattern), key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    """``additionalProperties`` that matches ``patternProperties`` keys with the bounded search."""
    from jsonschema import ValidationError

    if not isinstance(instance, dict):
        return
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = [
        key
        for key in instance
        if key not in properties
        and not any(
            _search(str(p), str(key)) for p in (patterns if isinstance(patterns, Mapping) else {})
        )
    ]
    if isinstance(additional, Mapping):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        shown = ", ".join(repr(extra) for extra in sorted(map(str, extras))[:10])
        yield ValidationError(f"Additional properties are not allowed ({shown} unexpected)")


def _not_checked_here(
    validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    return iter(())


def schema_validator(schema: Mapping[str, Any]) -> Any:
    """A JSON Schema validator for the server's ``schema`` (its declared draft, else 2020-12)
    that never fetches a reference and bounds every regex; None when the schema is itself
    invalid (then arguments are not checked here: the server checks them)."""
    import jsonschema
    import jsonschema.validators
    from referencing import Registry

    try:
        base = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
        base.check_schema(schema)
        bounded = jsonschema.validators.extend(
            base,
            {
                "pattern": _pattern,
                "patternProperties": _pattern_properties,
                "additionalProperties": _additional_properties,
                # matches patternProperties with unbounded re.search: left to the server
                "unevaluatedProperties": _not_checked_here,
            },
        )
        return bounded(schema, registry=Registry())  # references resolve inside the schema only
    except (jsonschema.SchemaError, RecursionError):
        return None


def schema_errors(validator: Any, arguments: object) -> list[str]:
    """Every way ``arguments`` break the schema, as ``path: message`` lines (at most 10)."""
    if validator is None:
        return []
    token = _deadline.set(time.monotonic() + CHECK_BUDGET)
    try:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    except Exception:  # a reference outside the schema, an unknown type or format deep in it
        return []
    finally:
        _deadline.reset(token)
    lines: list[str] = []
    for error in errors[:MAX_ERRORS]:
        where = ".".join(str(part) for part in error.absolute_path) or "arguments"
        lines.append(f"{where}: {error.message[:300]}")
    return lines


def bounded_result_check(tools: list[Any]) -> Callable[[str, Any], Coroutine[Any, Any, None]]:
    """What ``CheckedSession.validate_tool_result`` runs instead of the MCP SDK's: the server's
    structured content checked against its output schema with this module's validator (no
    reference fetched, every regex bounded) instead of the SDK's (unbounded ``re``, on the event
    loop, with a pattern and a value both chosen by the server). A mismatch raises
    ``RuntimeError``, as the SDK does."""
    schemas = {
        str(tool.name): tool.output_schema
        for tool in tools
        if isinstance(getattr(tool, "output_schema", None), Mapping)
    }
    validators: dict[str, Any] = {}

    async def validate_tool_result(name: str, result: Any) -> None:
        schema = schemas.get(name)
        structured = getattr(result, "structured_content", None)
        if schema is None or structured is None:
            return
        if name not in validators:
            validators[name] = schema_validator(schema)
        problems = schema_errors(validators[name], structured)
        if problems:
            raise RuntimeError(f"Invalid structured content returned by tool {name}: {problems[0]}")

    return validate_tool_result


__all__ = [
    "CHECK_BUDGET",
    "PATTERN_TIMEOUT",
    "bounded_result_check",
    "schema_errors",
    "schema_validator",
]
