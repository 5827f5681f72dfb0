"""The steps of a crew file: tasks, and entries holding one ``loop:``, ``graph:`` or
``ensemble:`` (nested to any depth), with ``until`` / ``when`` conditions in the safe syntax of
``config/conditions.py``. Errors point at the file, line and key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentensemble.agent import Agent
from agentensemble.config._attachments import attachment_entries
from agentensemble.config._memory import knowledge_list, task_scopes
from agentensemble.config._positions import Located, Path
from agentensemble.config._refs import is_import_path
from agentensemble.config._values import (
    as_list,
    construct,
    entries,
    imported,
    kind_of,
    known_keys,
    lookup,
    output_type_ref,
    task_review,
    tools_from,
)
from agentensemble.config.conditions import ConditionError, edge_condition, loop_condition
from agentensemble.task import Task
from agentensemble.workflows.step import step_label

#: An entry holding one of these keys is a loop, a graph or a nested ensemble, not a task.
STEP_KEYS = ("loop", "graph", "ensemble")
LOOP_KEYS = ("body", "until", "max_iterations", "on_max_iterations", "feedback", "context")
GRAPH_KEYS = ("start", "states", "edges", "max_steps", "on_max_steps", "feedback", "context")
NESTED_KEYS = ("tasks", "workflow", "model", "max_concurrency", "parallel_error_strategy")


def task_steps(doc: Located, section: Any, agents: dict[str, Agent]) -> list[Any]:
    if not section:
        raise doc.error(("tasks",), "a crew needs at least one task")
    return _steps(doc, ("tasks",), section, agents, {}, {})


def _steps(
    doc: Located,
    path: Path,
    section: Any,
    agents: dict[str, Agent],
    visible: dict[str, Any],
    named: dict[str, Any],
) -> list[Any]:
    """The steps of a section (the crew's tasks, a loop's body, a nested ensemble's tasks):
    tasks, or entries holding one ``loop:``, ``graph:`` or ``ensemble:``. ``visible``: the
    names ``context`` may use here (earlier steps, and what encloses them); ``named``: every
    name in the file so far (names are unique in a file)."""
    ordered: list[Any] = []
    here = dict(visible)
    for name, where, spec in entries(doc, path, section):
        step = _step(doc, where, name, spec, agents, here, named)
        label = getattr(step, "name", None)
        if label:
            if label in named:
                raise doc.error(
                    (*where, "name") if "name" in spec else where, f"two steps are named {label!r}"
                )
            named[label] = step
            here[label] = step
        ordered.append(step)
    return ordered


def _step(
    doc: Located,
    path: Path,
    name: str,
    spec: Mapping[str, Any],
    agents: dict[str, Agent],
    visible: dict[str, Any],
    named: dict[str, Any],
) -> Any:
    kinds = [key for key in STEP_KEYS if key in spec]
    if not kinds:
        return _task(doc, path, name, spec, agents, visible)
    extra = [key for key in spec if key not in (kinds[0], "name")]
    if len(kinds) > 1 or extra:
        raise doc.error(
            (*path, (kinds[1:] or extra)[0]),
            f"a {kinds[0]} entry holds only {kinds[0]}: (and name:); its settings go inside it",
        )
    name = str(spec.get("name") or name)
    if not name:
        raise doc.error(path, f"a {kinds[0]} in a list needs a name:")
    inner = (*path, kinds[0])
    body = spec[kinds[0]]
    if not isinstance(body, Mapping):
        raise doc.error(inner, f"expected the {kinds[0]}'s settings as a mapping")
    build = {"loop": _loop, "graph": _graph, "ensemble": _nested}[kinds[0]]
    return build(doc, inner, name, body, agents, visible, named)


def _step_context(
    doc: Located, path: Path, value: Any, visible: dict[str, Any], own: str, kind: str
) -> list[Any]:
    """The steps ``context`` names; the step itself (``own``, a ``kind``) is refused as the
    structure check refuses it (``workflows/structure.py``), not as an unknown name."""
    refs = as_list(doc, path, value)
    for i, ref in enumerate(refs):
        if own and ref == own and ref not in visible:
            raise doc.error(
                (*path, i),
                f"{kind} {own!r} has itself as context; a step cannot use its own output as "
                "its context: remove it from its context list",
            )
    return [
        lookup(doc, (*path, i), ref, visible, "task (an earlier one)") for i, ref in enumerate(refs)
    ]


def _loop(
    doc: Located,
    path: Path,
    name: str,
    spec: Mapping[str, Any],
    agents: dict[str, Agent],
    visible: dict[str, Any],
    named: dict[str, Any],
) -> Any:
    from agentensemble.workflows.loop import Loop

    known_keys(doc, path, spec, LOOP_KEYS, "Loop")
    fields = {k: v for k, v in spec.items() if k not in ("body", "until", "context")}
    if "context" in spec:
        fields["context"] = _step_context(
            doc, (*path, "context"), spec["context"], visible, name, "loop"
        )
    if not spec.get("body"):
        raise doc.error(
            (*path, "body") if "body" in spec else path,
            f"loop {name!r} needs a body: with at least one step",
        )
    body = _steps(doc, (*path, "body"), spec["body"], agents, visible, named)
    if spec.get("until") is not None:
        keys = [step_label(step) for step in body]
        fields["until"] = _condition(doc, (*path, "until"), spec["until"], loop_condition, keys)
    return construct(doc, path, Loop, {"name": name, "body": body, **fields})


def _graph(
    doc: Located,
    path: Path,
    name: str,
    spec: Mapping[str, Any],
    agents: dict[str, Agent],
    visible: dict[str, Any],
    named: dict[str, Any],
) -> Any:
    from agentensemble.workflows.graph import Edge, Graph

    known_keys(doc, path, spec, GRAPH_KEYS, "Graph")
    fields = {k: v for k, v in spec.items() if k not in ("states", "edges", "context")}
    if "context" in spec:
        fields["context"] = _step_context(
            doc, (*path, "context"), spec["context"], visible, name, "graph"
        )
    section = spec.get("states")
    if not isinstance(section, Mapping) or not section:
        raise doc.error(
            (*path, "states") if "states" in spec else path,
            "a graph needs states: a mapping of state names to steps",
        )
    states: dict[str, Any] = {}
    for state, where, entry in entries(doc, (*path, "states"), section):
        states[state] = _step(doc, where, state, entry, agents, visible, named)
    edges: list[Any] = []
    for index, edge in enumerate(as_list(doc, (*path, "edges"), spec.get("edges") or [])):
        where = (*path, "edges", index)
        if not isinstance(edge, Mapping):
            raise doc.error(where, "an edge is {from: state, to: state or END, when: condition}")
        known_keys(doc, where, edge, ("from", "to", "when"), "Edge")
        target = edge.get("to")
        settings: dict[str, Any] = {
            "source": str(edge.get("from", "")),
            "target": Graph.END if target == "END" else str(target),
        }
        if edge.get("when") is not None:
            settings["when"] = _condition(
                doc, (*where, "when"), edge["when"], edge_condition, list(states)
            )
        edges.append(construct(doc, where, Edge, settings))
    return construct(doc, path, Graph, {"name": name, "states": states, "edges": edges, **fields})


def _nested(
    doc: Located,
    path: Path,
    name: str,
    spec: Mapping[str, Any],
    agents: dict[str, Agent],
    visible: dict[str, Any],
    named: dict[str, Any],
) -> Any:
    from agentensemble.ensemble import Ensemble

    known_keys(doc, path, spec, NESTED_KEYS, "Ensemble")
    if not spec.get("tasks"):
        raise doc.error(path, f"ensemble {name!r} needs tasks:")
    tasks = _steps(doc, (*path, "tasks"), spec["tasks"], agents, {}, named)
    fields = {k: v for k, v in spec.items() if k not in ("tasks", "model")}
    if spec.get("model") is not None:
        fields["llm"] = spec["model"]
    return construct(
        doc, path, Ensemble, {"name": name, "tasks": tasks, **fields}, whole=(*path, "tasks")
    )


def _condition(doc: Located, path: Path, text: Any, parse: Any, names: list[str]) -> Any:
    """A condition (``config/conditions.py``) or an import path to a Python function."""
    if not isinstance(text, str | bool):
        raise doc.error(path, f"expected a condition as text, got {kind_of(text)}")
    text = str(text).lower() if isinstance(text, bool) else text
    if is_import_path(text.strip()):
        return imported(doc, path, text.strip())
    try:
        return parse(text, names)
    except ConditionError as error:
        raise doc.error(path, f"bad condition {text!r}: {error}") from None


def _task(
    doc: Located,
    path: Path,
    name: str,
    spec: Mapping[str, Any],
    agents: dict[str, Agent],
    visible: dict[str, Any],
) -> Task:
    known_keys(doc, path, spec, (*Task.model_fields, *STEP_KEYS), "Task")
    fields = dict(spec)
    if name:
        fields.setdefault("name", name)
    if "agent" in fields:
        fields["agent"] = lookup(doc, (*path, "agent"), fields["agent"], agents, "agent")
    if "context" in fields:
        own = str(fields.get("name") or "")
        fields["context"] = _step_context(
            doc, (*path, "context"), fields["context"], visible, own, "task"
        )
    fields["tools"] = tools_from(doc, (*path, "tools"), fields.get("tools"))
    for key in ("input_guardrails", "output_guardrails"):
        if key in fields:
            refs = as_list(doc, (*path, key), fields[key])
            fields[key] = [imported(doc, (*path, key, i), r) for i, r in enumerate(refs)]
    if "handler" in fields:
        fields["handler"] = imported(doc, (*path, "handler"), fields["handler"])
    if fields.get("output_type") is not None:
        fields["output_type"] = output_type_ref(doc, (*path, "output_type"), fields["output_type"])
    for key in ("review", "before_review"):
        if fields.get(key) is not None:
            fields[key] = task_review(doc, (*path, key), fields[key])
    if fields.get("memory") is not None:  # one scope may be written without brackets
        fields["memory"] = task_scopes(doc, (*path, "memory"), fields["memory"])
    if fields.get("knowledge") is not None:
        fields["knowledge"] = knowledge_list(doc, (*path, "knowledge"), fields["knowledge"])
    if fields.get("attachments") is not None:
        fields["attachments"] = attachment_entries(
            doc, (*path, "attachments"), fields["attachments"]
        )
    task: Task = construct(doc, path, Task, fields)
    return task


__all__ = ["GRAPH_KEYS", "LOOP_KEYS", "NESTED_KEYS", "STEP_KEYS", "task_steps"]
