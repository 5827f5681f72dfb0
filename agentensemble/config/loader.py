"""Crew files: an Ensemble from YAML (or the same shape as a dict), with errors that point at
the file, the line and the key. ``load_crew`` is the public door.

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

from agentensemble._base.regular_file import UnreadableFile, read_regular_file
from agentensemble.agent import Agent
from agentensemble.config._crew_imports import crew_folder
from agentensemble.config._memory import MEMORY_SECTIONS, memory_settings
from agentensemble.config._positions import ConfigFileError, Located, Path, load_located
from agentensemble.config._skills import skills_from
from agentensemble.config._steps import task_steps
from agentensemble.config._values import construct, entries, known_keys, tools_from

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
TOP_LEVEL += MEMORY_SECTIONS  # memory:, knowledge: (config/_memory.py)
#: Ensemble fields a file sets otherwise (model:, review:, the sections) or never (objects).
_NOT_PLAIN = frozenset(
    {"tasks", "agents", "llm", "manager_llm", "review_handler", "review_policy", "listeners"}
    | set(MEMORY_SECTIONS)
)
REVIEW_KEYS = ("policy", "handler", "url", "secret_env", "timeout")
_YAML_ONLY = {"name"}  # the entry's name in list form


def load_crew(source: str | os.PathLike[str] | Mapping[str, Any]) -> Ensemble:
    """An ensemble from a crew file (a path; docs/yaml.md) or from the same shape as Python data
    (a mapping); errors name the file, line and key (or the key path)."""
    if isinstance(source, Mapping):
        return ensemble_from_dict(source)
    return ensemble_from_yaml(source)


MAX_CREW_FILE_BYTES = 10 * 1024 * 1024
"""A crew file longer than this (10 MiB, far beyond any crew's prompts) is refused unread."""


def read_crew_text(path: str | os.PathLike[str]) -> str:
    """The text of the crew file at ``path``, read as a bounded regular file (a FIFO named
    ``crew.yaml`` blocked the command for ever, a link to ``/dev/zero`` read until memory ran
    out), or a ``ConfigFileError`` naming the file and what was wrong."""
    try:
        return read_regular_file(path, max_bytes=MAX_CREW_FILE_BYTES).decode("utf-8")
    except UnreadableFile as error:
        raise ConfigFileError(
            f"cannot read the file: it {error.reason}", file=str(path), line=None, key=""
        ) from None
    except UnicodeDecodeError as error:
        raise ConfigFileError(
            f"cannot read the file: it is not UTF-8 text ({error.reason} at byte {error.start})",
            file=str(path),
            line=None,
            key="",
        ) from None


def ensemble_from_yaml(
    path: str | os.PathLike[str], overrides: Mapping[str, Any] | None = None
) -> Ensemble:
    """Read a crew file. ``mytools:search`` may name ``mytools.py`` beside it: the file's folder
    is on ``sys.path`` while such references are imported, and only then (``_crew_imports``).
    ``overrides``: Ensemble settings the command line gives (``--review``), applied before the
    ensemble is checked, so a crew asking for reviews can get its reviewer there."""
    file = FilePath(path)
    text = read_crew_text(file)
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
    known_keys(doc, (), data, (*TOP_LEVEL, *plain), "Ensemble")  # max_concurrency, capture...
    agents = _agents(doc, data.get("agents") or {})
    tasks = task_steps(doc, data.get("tasks"), agents)
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
    settings.update(memory_settings(doc, data))
    settings.update(overrides or {})
    _check_assigned(doc, data, agents, tasks)
    ensemble: Ensemble = construct(doc, (), Ensemble, settings, whole=("tasks",))
    return ensemble


def _check_assigned(
    doc: Located, data: Mapping[str, Any], agents: dict[str, Agent], steps: list[Any]
) -> None:
    """Ensemble's check for tasks beside unused agents (the CrewAI habit), in the file's words."""
    from agentensemble.workflows import Workflow
    from agentensemble.workflows.step import step_kind
    from agentensemble.workflows.team import unassigned_tasks

    try:
        workflow = Workflow(data.get("workflow") or Workflow.SEQUENTIAL)
    except ValueError:
        return  # the Ensemble's own validation names the bad workflow
    tasks = [step for step in steps if step_kind(step) == "task"]
    orphans, idle = unassigned_tasks(workflow, list(agents.values()), tasks)
    if not orphans:
        return
    _, task = orphans[0]
    idle_ids = {id(agent) for agent in idle}
    names = [name for name, agent in agents.items() if id(agent) in idle_ids]
    by_name = isinstance(data.get("tasks"), Mapping) and task.name is not None
    position = next(i for i, step in enumerate(steps) if step is task)
    where: Path = ("tasks", str(task.name)) if by_name else ("tasks", position)
    raise doc.error(
        where,
        f"this task has no agent:, and agents: lists {', '.join(names)}, which no task uses; "
        f"with workflow: {workflow.value}, agents: hands out no work (the task would run as a "
        f"synthesised 'Assistant' with no tools). Add `agent: {names[0]}` to the task, or set "
        "`workflow: hierarchical` (with `manager_model:`) to let a manager hand tasks out",
    )


# -- sections -----------------------------------------------------------------------------------


def _agents(doc: Located, section: Any) -> dict[str, Agent]:
    agents: dict[str, Agent] = {}
    for name, path, spec in entries(doc, ("agents",), section):
        known_keys(doc, path, spec, (*Agent.model_fields, *_YAML_ONLY), "Agent")
        fields = {k: v for k, v in spec.items() if k not in _YAML_ONLY}
        fields["tools"] = tools_from(doc, (*path, "tools"), fields.get("tools"))
        if "skills" in fields:
            fields["skills"] = skills_from(doc, (*path, "skills"), fields["skills"])
        if "llm" in fields:
            fields["llm"] = _model(doc, (*path, "llm"), fields["llm"])
        agent = construct(doc, path, Agent, fields)
        agents[name or agent.role] = agent
    return agents


# -- values -------------------------------------------------------------------------------------


def _model(doc: Located, path: Path, value: Any) -> Any:
    """A model name, or a mapping of LLM settings: ``{model: openai/gpt-4o, temperature: 0}``."""
    if not isinstance(value, Mapping):
        return value
    from agentensemble.llm.litellm_model import LLM

    if "model" not in value:
        raise doc.error(path, "a model written as a mapping needs model: (a litellm model name)")
    settings = {str(key): item for key, item in value.items()}
    return construct(doc, path, LLM, settings)


def _review(doc: Located, value: Any) -> dict[str, Any]:
    path: Path = ("review",)
    if not isinstance(value, Mapping):
        raise doc.error(path, "expected a mapping with policy and handler")
    known_keys(doc, path, value, REVIEW_KEYS, "review")
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
    """``console``, ``auto``, ``webhook`` (with ``url``; the secret read from ``secret_env``),
    ``mcp`` (the user of the MCP client calling a served ensemble), ``api`` (the caller of the
    run API that started the run) or ``ag-ui`` (the front end of a served AG-UI run); see
    docs/serve.md."""
    if kind == "mcp":
        from agentensemble.serve.mcp_review import MCPReviewHandler  # no mcp import: cheap

        return MCPReviewHandler()
    if kind == "api":
        from agentensemble.serve._run_api_review import RunAPIReviewHandler  # no Starlette

        return RunAPIReviewHandler()
    if kind == "ag-ui":
        from agentensemble.serve._ag_ui_review import AGUIReviewHandler  # no ag_ui import

        return AGUIReviewHandler()
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
    raise ValueError(
        f"unknown review handler {kind!r}: use console, auto, webhook, mcp, api or ag-ui"
    )


__all__ = [
    "build_ensemble",
    "ensemble_from_dict",
    "ensemble_from_yaml",
    "load_crew",
    "review_handler",
]
