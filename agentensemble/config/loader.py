"""Crew files: an Ensemble from YAML (or the same shape as a dict), with errors that point at
the file, the line and the key.

```yaml
model: openai/gpt-4o-mini          # default model for agents without one
workflow: sequential
review: {policy: after_last_task, handler: console}
agents:
  researcher: {role: Researcher, goal: Find facts about {topic}, tools: [calculator]}
tasks:
  research: {description: Research {topic}, agent: researcher}
  write: {description: Write about {topic}, context: [research]}
```
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path as FilePath
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agentensemble.agent import Agent
from agentensemble.config._crew_imports import crew_folder, importable_crew_folder
from agentensemble.config._positions import ConfigFileError, Located, Path, load_located
from agentensemble.config._refs import BadReference, import_object, make_tool
from agentensemble.errors import ConfigurationError
from agentensemble.hints import FOREIGN_NAMES, MODEL_SETTINGS
from agentensemble.task import Task
from agentensemble.tools.resolver import ToolResolver

if TYPE_CHECKING:
    from agentensemble.ensemble import Ensemble

#: Workflow settings passed to Ensemble as they are (crew-file key -> Ensemble field).
WORKFLOW_SETTINGS = {
    "max_concurrency": "max_concurrency",
    "parallel_error_strategy": "parallel_error_strategy",
    "manager_model": "manager_llm",
    "manager_max_iterations": "manager_max_iterations",
    "max_delegation_depth": "max_delegation_depth",
}
TOP_LEVEL = ("model", "workflow", "verbose", "review", "agents", "tasks", *WORKFLOW_SETTINGS)
#: Ensemble fields a file sets otherwise (model:, review:, the sections) or never (objects).
_NOT_PLAIN = frozenset(
    {"tasks", "agents", "llm", "manager_llm", "review_handler", "review_policy", "listeners"}
)
REVIEW_KEYS = ("policy", "handler", "url", "secret_env", "timeout")
_SCALARS: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool}
_YAML_ONLY = {"name"}  # the entry's name in list form


def ensemble_from_yaml(
    path: str | os.PathLike[str], overrides: Mapping[str, Any] | None = None
) -> Ensemble:
    """Read a crew file. ``mytools:search`` may name ``mytools.py`` beside it: the file's folder
    is on ``sys.path`` while such references are imported, and only then (``_crew_imports``).
    ``overrides``: Ensemble settings the command line gives (``--review``), applied before the
    ensemble is checked, so a crew asking for reviews can get its reviewer there."""
    file = FilePath(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigFileError(
            f"cannot read the file: {error}", file=str(file), line=None, key=""
        ) from None
    with crew_folder(str(file.resolve().parent)):
        return build_ensemble(load_located(text, str(file)), overrides)


def ensemble_from_dict(data: Mapping[str, Any], source: str = "<dict>") -> Ensemble:
    """The same shape as a crew file, as Python data; errors name the key path."""
    return build_ensemble(Located(data=data, source=source))


def build_ensemble(doc: Located, overrides: Mapping[str, Any] | None = None) -> Ensemble:
    from agentensemble.ensemble import Ensemble  # the facade sits above this module's users

    data = doc.data
    if not isinstance(data, Mapping):
        raise doc.error((), f"a crew file is a mapping with {', '.join(TOP_LEVEL)}")
    plain = [name for name in Ensemble.model_fields if name not in _NOT_PLAIN]
    _known_keys(doc, (), data, (*TOP_LEVEL, *plain), "Ensemble")  # max_concurrency, capture...
    agents = _agents(doc, data.get("agents") or {})
    tasks = _tasks(doc, data.get("tasks"), agents)
    settings: dict[str, Any] = {"tasks": tasks, "agents": list(agents.values())}
    names = {"model": "llm", **WORKFLOW_SETTINGS, **{key: key for key in plain}}
    for key, field in names.items():
        if data.get(key) is not None:
            settings[field] = data[key]
    for key in ("model", "manager_model"):
        if data.get(key) is not None:
            settings[names[key]] = _model(doc, (key,), data[key])
    if data.get("review") is not None:
        settings.update(_review(doc, data["review"]))
    settings.update(overrides or {})
    _check_assigned(doc, data, agents, tasks)
    ensemble: Ensemble = _construct(doc, (), Ensemble, settings, whole=("tasks",))
    return ensemble


def _check_assigned(
    doc: Located, data: Mapping[str, Any], agents: dict[str, Agent], tasks: list[Task]
) -> None:
    """Ensemble's check for tasks beside unused agents (the CrewAI habit), in the file's words."""
    from agentensemble.workflows import Workflow
    from agentensemble.workflows.team import unassigned_tasks

    try:
        workflow = Workflow(data.get("workflow") or Workflow.SEQUENTIAL)
    except ValueError:
        return  # the Ensemble's own validation names the bad workflow
    orphans, idle = unassigned_tasks(workflow, list(agents.values()), tasks)
    if not orphans:
        return
    number, task = orphans[0]
    idle_ids = {id(agent) for agent in idle}
    names = [name for name, agent in agents.items() if id(agent) in idle_ids]
    by_name = isinstance(data.get("tasks"), Mapping) and task.name is not None
    where: Path = ("tasks", str(task.name)) if by_name else ("tasks", number - 1)
    raise doc.error(
        where,
        f"this task has no agent:, and agents: lists {', '.join(names)}, which no task uses; "
        f"with workflow: {workflow.value}, agents: hands out no work (the task would run as a "
        f"synthesised 'Assistant' with no tools). Add `agent: {names[0]}` to the task, or set "
        "`workflow: hierarchical` (with `manager_model:`) to let a manager hand tasks out",
    )


# -- sections -----------------------------------------------------------------------------------


def _entries(doc: Located, path: Path, section: Any) -> list[tuple[str, Path, Mapping[str, Any]]]:
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
            raise doc.error(where, f"expected a mapping of settings, got {_kind(spec)}")
    return items


def _agents(doc: Located, section: Any) -> dict[str, Agent]:
    agents: dict[str, Agent] = {}
    for name, path, spec in _entries(doc, ("agents",), section):
        _known_keys(doc, path, spec, (*Agent.model_fields, *_YAML_ONLY), "Agent")
        fields = {k: v for k, v in spec.items() if k not in _YAML_ONLY}
        fields["tools"] = _tools(doc, (*path, "tools"), fields.get("tools"))
        if "llm" in fields:
            fields["llm"] = _model(doc, (*path, "llm"), fields["llm"])
        agent = _construct(doc, path, Agent, fields)
        agents[name or agent.role] = agent
    return agents


def _tasks(doc: Located, section: Any, agents: dict[str, Agent]) -> list[Task]:
    if not section:
        raise doc.error(("tasks",), "a crew needs at least one task")
    tasks: dict[str, Task] = {}
    ordered: list[Task] = []
    for name, path, spec in _entries(doc, ("tasks",), section):
        _known_keys(doc, path, spec, tuple(Task.model_fields), "Task")
        fields = dict(spec)
        if name:
            fields.setdefault("name", name)
        if "agent" in fields:
            fields["agent"] = _lookup(doc, (*path, "agent"), fields["agent"], agents, "agent")
        if "context" in fields:
            fields["context"] = [
                _lookup(doc, (*path, "context", i), ref, tasks, "task (an earlier one)")
                for i, ref in enumerate(_list(doc, (*path, "context"), fields["context"]))
            ]
        fields["tools"] = _tools(doc, (*path, "tools"), fields.get("tools"))
        for key in ("input_guardrails", "output_guardrails"):
            if key in fields:
                refs = _list(doc, (*path, key), fields[key])
                fields[key] = [_imported(doc, (*path, key, i), r) for i, r in enumerate(refs)]
        if "handler" in fields:
            fields["handler"] = _imported(doc, (*path, "handler"), fields["handler"])
        if fields.get("output_type") is not None:
            fields["output_type"] = _output_type(doc, (*path, "output_type"), fields["output_type"])
        for key in ("review", "before_review"):
            if fields.get(key) is not None:
                fields[key] = _task_review(doc, (*path, key), fields[key])
        task = _construct(doc, path, Task, fields)
        if task.name:
            if task.name in tasks:
                raise doc.error((*path, "name"), f"two tasks are named {task.name!r}")
            tasks[task.name] = task
        ordered.append(task)
    return ordered


# -- values -------------------------------------------------------------------------------------


def _tools(doc: Located, path: Path, value: Any) -> list[Any]:
    tools: list[Any] = []
    for index, item in enumerate(_list(doc, path, value or [])):
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
            with importable_crew_folder():
                made = make_tool(str(reference), dict(arguments or {}))
            ToolResolver().resolve([made])  # one entry at a time: errors name their line
        except (BadReference, ConfigurationError) as error:
            raise doc.error(where, str(error)) from None
        tools.append(made)
    return tools


def _model(doc: Located, path: Path, value: Any) -> Any:
    """A model name, or a mapping of LLM settings: ``{model: openai/gpt-4o, temperature: 0}``."""
    if not isinstance(value, Mapping):
        return value
    from agentensemble.llm.litellm_model import LLM

    if "model" not in value:
        raise doc.error(path, "a model written as a mapping needs model: (a litellm model name)")
    settings = {str(key): item for key, item in value.items()}
    return _construct(doc, path, LLM, settings)


def _imported(doc: Located, path: Path, reference: Any) -> Any:
    if not isinstance(reference, str):
        raise doc.error(
            path, f"expected an import path package.module:name, got {_kind(reference)}"
        )
    try:
        with importable_crew_folder():
            return import_object(reference)
    except BadReference as error:
        raise doc.error(path, str(error)) from None


def _output_type(doc: Located, path: Path, reference: Any) -> Any:
    if isinstance(reference, str) and reference in _SCALARS:
        return _SCALARS[reference]
    return _imported(doc, path, reference)


def _task_review(doc: Located, path: Path, value: Any) -> Any:
    from agentensemble_review import Review  # only when the file asks for a review

    if value in ("required", True):
        return Review.required()
    if value in ("skip", False):
        return Review.skip()
    if isinstance(value, Mapping):
        _known_keys(doc, path, value, ("prompt", "timeout", "on_timeout"), "Review")
        return _construct(doc, path, Review.required, dict(value))
    raise doc.error(path, "expected required, skip or {prompt, timeout, on_timeout}")


def _review(doc: Located, value: Any) -> dict[str, Any]:
    path: Path = ("review",)
    if not isinstance(value, Mapping):
        raise doc.error(path, "expected a mapping with policy and handler")
    _known_keys(doc, path, value, REVIEW_KEYS, "review")
    settings: dict[str, Any] = {}
    if value.get("policy") is not None:
        settings["review_policy"] = value["policy"]
    handler = value.get("handler")
    if handler is not None:
        try:
            settings["review_handler"] = review_handler(
                str(handler), value.get("url"), value.get("secret_env"), value.get("timeout")
            )
        except ValueError as error:
            raise doc.error((*path, "handler"), str(error)) from None
    return settings


def review_handler(
    kind: str, url: str | None = None, secret_env: str | None = None, timeout: Any = None
) -> Any:
    """``console``, ``auto`` or ``webhook`` (with ``url``; the secret read from ``secret_env``)."""
    import agentensemble_review as review

    if kind == "console":
        return review.ConsoleReviewHandler()
    if kind == "auto":
        return review.AutoApproveReviewHandler()
    if kind == "webhook":
        if not url:
            raise ValueError("handler webhook needs url: https://...")
        secret = None
        if secret_env:
            secret = os.environ.get(secret_env)
            if secret is None:
                raise ValueError(f"secret_env names {secret_env!r}, which is not set")
        return review.WebhookReviewHandler(url, secret=secret, timeout=timeout)
    raise ValueError(f"unknown review handler {kind!r}: use console, auto or webhook")


# -- helpers ------------------------------------------------------------------------------------


#: Model settings written beside an agent's or a task's settings, with the crew file's fix.
_MODEL_SETTING_IN_FILE = (
    "{name} is a setting of the model: write the model as a mapping, "
    "`llm: {model: openai/gpt-4o-mini, {name}: ...}` (on the agent; `model:` at the top level)"
)


def _known_keys(doc: Located, path: Path, spec: Mapping[str, Any], known: Any, what: str) -> None:
    foreign = {
        **FOREIGN_NAMES.get(what, {}),
        **{name: _MODEL_SETTING_IN_FILE for name in MODEL_SETTINGS},
    }
    for key in spec:
        if key in known:
            continue
        hint = foreign.get(str(key))
        advice = hint.replace("{name}", str(key)) if hint else f"known keys: {', '.join(known)}"
        raise doc.error((*path, str(key)), f"{what} has no setting {key!r}: {advice}")


def _list(doc: Located, path: Path, value: Any) -> list[Any]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise doc.error(path, f"expected a list, got {_kind(value)}")
    return value


def _lookup(doc: Located, path: Path, ref: Any, known: Mapping[str, Any], what: str) -> Any:
    if isinstance(ref, str) and ref in known:
        return known[ref]
    names = ", ".join(known) or "none"
    raise doc.error(path, f"unknown {what} {ref!r} (known: {names})")


def _construct(
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
        message = str(first["msg"]).removeprefix("Value error, ")
        raise doc.error((*path, *loc) if loc else where, message) from None
    except (ConfigurationError, TypeError) as error:
        raise doc.error(where, str(error)) from None


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return "text" if isinstance(value, str) else type(value).__name__


__all__ = ["build_ensemble", "ensemble_from_dict", "ensemble_from_yaml", "review_handler"]
