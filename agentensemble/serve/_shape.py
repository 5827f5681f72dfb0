"""What a served ensemble looks like from outside: its inputs, its description, its result.

Pure functions shared by the MCP server and the A2A app, so both describe an ensemble the same
way: the inputs a run needs are the arguments (``needed_inputs``: a string per template
variable, an array of strings per ``for_each`` list; tasks inside loops, graphs and nested
ensembles too; ``{item}`` and ``{index}`` are filled per item, never asked for), the tasks
make the description (and the A2A skills), the last task's output type (if any) is the
structured result.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentensemble.ensemble import Ensemble
from agentensemble.errors import ConfigurationError
from agentensemble.logging import redact_text
from agentensemble.outputs import EnsembleOutput
from agentensemble.templates import template_variables
from agentensemble.workflows.prepare import needed_inputs, team_and_task_agents
from agentensemble.workflows.step import leaf_tasks, step_kind, step_label

#: A served ensemble: the object itself, or a factory called once per call (a fresh ensemble).
EnsembleSource = Ensemble | Callable[[], Ensemble]

#: MCP tool names: letters, digits, ``_``, ``-`` and ``.``, at most 64 characters.
_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
#: The longest argument value accepted (characters); a longer one is refused before any run.
MAX_ARGUMENT_CHARS = 100_000
#: The most items a list argument (a ``for_each`` input) may hold: each is one task run.
MAX_LIST_ITEMS = 1_000
#: The longest error text sent back to a caller.
MAX_ERROR_CHARS = 4_000


def ensemble_of(source: EnsembleSource) -> Ensemble:
    """The ensemble to run: the instance itself, or a fresh one from the factory."""
    if isinstance(source, Ensemble):
        return source
    made = source()
    if not isinstance(made, Ensemble):
        raise ConfigurationError(
            f"the ensemble factory {getattr(source, '__name__', source)!r} returned "
            f"{type(made).__name__}, not an Ensemble"
        )
    return made


def check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigurationError(
            f"cannot serve an ensemble as {name!r}: a tool name is 1 to 64 letters, digits, "
            "'_', '-' or '.'"
        )
    return name


def tool_name_for_file(stem: str) -> str:
    """A crew file's stem as a tool name (other characters become ``_``)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.\-]", "_", stem)[:64]
    return cleaned or "crew"


def _places_by_variable(ensemble: Ensemble) -> dict[str, list[str]]:
    """Each variable the ensemble's texts use, and where (for its description), in order of
    first use: every task (inside loops, graphs and nested ensembles too) and every agent."""
    places: dict[str, list[str]] = {}

    def note(names: Sequence[str], where: str) -> None:
        for name in names:
            used = places.setdefault(name, [])
            if where not in used:
                used.append(where)

    for task in leaf_tasks(ensemble.tasks):
        if task.for_each is not None:
            note([task.for_each], f"one run of task {task.label!r} per item")
        for text in (task.description, task.expected_output):
            note(template_variables(text or ""), f"task {task.label!r}")
    for agent in team_and_task_agents(ensemble):
        for text in (agent.role, agent.goal, agent.background):
            note(template_variables(text or ""), f"agent {agent.role!r}")
    return places


def input_kinds(ensemble: Ensemble) -> dict[str, str]:
    """Every input a run of the ensemble needs, in order of first use: "list" for a
    ``for_each`` input, else "text" (``needed_inputs``, so never ``{item}`` or ``{index}``
    where a fan-out fills them)."""
    needed = needed_inputs(ensemble)
    order = [name for name in _places_by_variable(ensemble) if name in needed]
    order += [name for name in needed if name not in order]
    return {name: needed[name] for name in order}


def input_variables(ensemble: Ensemble) -> list[str]:
    """The names of the inputs a run needs, in order of first use."""
    return list(input_kinds(ensemble))


def input_schema(ensemble: Ensemble) -> dict[str, Any]:
    """A JSON schema with every needed input required, each described: a bounded string per
    template variable, a bounded array of bounded strings per ``for_each`` input."""
    places = _places_by_variable(ensemble)
    properties: dict[str, Any] = {}
    for name, kind in input_kinds(ensemble).items():
        where = ", ".join(places.get(name, [])) or "the run"
        if kind == "list":
            properties[name] = {
                "type": "array",
                "items": {"type": "string", "maxLength": MAX_ARGUMENT_CHARS},
                "maxItems": MAX_LIST_ITEMS,
                "description": f"a list of texts: {where}",
            }
        else:
            properties[name] = {
                "type": "string",
                "description": f"fills {{{name}}} in {where}",
                "maxLength": MAX_ARGUMENT_CHARS,
            }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def description(ensemble: Ensemble) -> str:
    """What the ensemble does, from its steps, and what it returns."""
    lines = [f"Runs a team of agents ({ensemble.workflow.value} workflow) through these steps:"]
    for index, step in enumerate(ensemble.tasks, start=1):
        lines.append(f"{index}. {step_summary(step)}")
    lines.append(f"Returns: {_returns(ensemble)}")
    return "\n".join(lines)


def step_summary(step: Any) -> str:
    """One line for a step: a task's first line and its agent's role; a loop, graph or nested
    ensemble by its kind and name, with the first lines of the tasks inside it."""
    if step_kind(step) == "task":
        who = f" ({step.agent.role})" if step.agent is not None else ""
        return f"{_first_line(step.description)}{who}"
    inner = "; ".join(_first_line(task.description) for task in leaf_tasks([step]))
    return f"{step_kind(step)} {step_label(step)!r}: {inner}"


def last_task(ensemble: Ensemble) -> Any | None:
    """The ensemble's last step when it is a task (its output is the run's result); None when
    the run ends in a loop, graph or nested ensemble (which task answers last is decided as
    it runs)."""
    last = ensemble.tasks[-1]
    return last if step_kind(last) == "task" else None


def _returns(ensemble: Ensemble) -> str:
    task = last_task(ensemble)
    if task is not None:
        return _first_line(task.expected_output)
    last = ensemble.tasks[-1]
    return f"the last answer of {step_kind(last)} {step_label(last)!r}"


def _first_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= 200 else first[:197] + "..."


def output_schema(ensemble: Ensemble) -> dict[str, Any] | None:
    """The last task's output type as an object schema, or None when it is untyped (or the run
    ends in a loop, graph or nested ensemble)."""
    task = last_task(ensemble)
    output_type = task.output_type if task is not None else None
    if output_type is None:
        return None
    from agentensemble.execution.structured import output_spec

    return dict(output_spec(output_type).schema)


def stopped(output: EnsembleOutput) -> str | None:
    """Why a run that ended early returns nothing (None when it completed). A review that
    stopped a run (or timed out) must not let the unapproved output out: fail closed."""
    reason = output.exit_reason.value
    if reason == "completed":
        return None
    return (
        f"the run stopped before completing (exit reason: {reason}), e.g. a reviewer said "
        "stop or did not answer in time; no result is returned"
    )


def structured_result(ensemble: Ensemble, output: EnsembleOutput) -> dict[str, Any] | None:
    """The last task's parsed value shaped by ``output_schema`` (None when untyped)."""
    task = last_task(ensemble)
    output_type = task.output_type if task is not None else None
    if output_type is None or not output.task_outputs:
        return None
    from agentensemble.execution.structured import WRAP_KEY, output_spec

    spec = output_spec(output_type)
    value = spec.adapter.dump_python(output.task_outputs[-1].parsed, mode="json")
    return {WRAP_KEY: value} if spec.wrapped else dict(value)


@dataclass(frozen=True)
class BadArguments(Exception):
    """Arguments a caller sent that the ensemble cannot take; found before any model call."""

    message: str

    def __str__(self) -> str:
        return self.message


def check_arguments(
    names: Sequence[str] | Mapping[str, str], arguments: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The inputs of one call: every input present, nothing else; a "text" input a bounded
    string, a "list" input (``input_kinds``) a bounded list of bounded strings. ``names``: the
    inputs' kinds, or their names when all are text."""
    kinds = dict(names) if isinstance(names, Mapping) else dict.fromkeys(names, "text")
    given = dict(arguments or {})
    missing = [name for name in kinds if name not in given]
    unknown = sorted(set(given) - set(kinds))
    problems: list[str] = []
    if missing:
        problems.append("missing argument(s): " + ", ".join(missing))
    if unknown:
        shown = ", ".join(repr(name)[:80] for name in unknown[:10])
        accepted = ", ".join(kinds) or "none"
        problems.append(f"unknown argument(s): {shown} (accepted: {accepted})")
    for name, kind in kinds.items():
        if name in given:
            problem = (_list_problem if kind == "list" else _text_problem)(name, given[name])
            if problem:
                problems.append(problem)
    if problems:
        raise BadArguments("; ".join(problems))
    return {
        name: list(given[name]) if kind == "list" else given[name] for name, kind in kinds.items()
    }


def _text_problem(name: str, value: Any, what: str = "argument") -> str | None:
    if not isinstance(value, str):
        return f"{what} {name!r} must be a string, got {type(value).__name__}"
    if len(value) > MAX_ARGUMENT_CHARS:
        return f"{what} {name!r} is {len(value)} characters long; the limit is {MAX_ARGUMENT_CHARS}"
    return None


def _list_problem(name: str, value: Any) -> str | None:
    if not isinstance(value, list):
        return f"argument {name!r} must be a list of strings, got {type(value).__name__}"
    if len(value) > MAX_LIST_ITEMS:
        return f"argument {name!r} has {len(value)} items; the limit is {MAX_LIST_ITEMS}"
    for index, item in enumerate(value):
        problem = _text_problem(f"{name}[{index}]", item, what="item")
        if problem:
            return problem  # the first bad item: a hostile list is not echoed item by item
    return None


def error_text(error: BaseException) -> str:
    """An error as a caller may see it: its message, redacted and bounded."""
    message = str(error) or type(error).__name__
    text = redact_text(f"{type(error).__name__}: {message}")
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 16] + " ... (truncated)"
    return text


__all__ = [
    "MAX_ARGUMENT_CHARS",
    "MAX_LIST_ITEMS",
    "BadArguments",
    "EnsembleSource",
    "check_arguments",
    "check_name",
    "description",
    "ensemble_of",
    "error_text",
    "input_kinds",
    "input_schema",
    "input_variables",
    "output_schema",
    "stopped",
    "structured_result",
    "tool_name_for_file",
]
