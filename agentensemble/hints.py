"""Help for newcomers: names from other frameworks, a forgotten ``context``, a tool with no
description. Hints make errors say what to write instead; warnings flag what is legal but
probably a mistake. Silence a warning class with the ``warnings`` module:
``warnings.filterwarnings("ignore", category=MissingContextWarning)``.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import sys
import sysconfig
import warnings
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any, get_args, get_origin

_BACKGROUND = "use background=... (CrewAI's backstory is agentensemble's background)"
_ON_TASK = "{name} belongs on Task: Task(description=..., expected_output=..., agent=...)"
_ON_AGENT = "{name} belongs on Agent: Agent(role=..., goal=..., background=...)"
_MODEL = "use llm=... (a model name such as 'openai/gpt-4o-mini', an LLM or a ChatModel)"
_OUTPUT_TYPE = "use output_type=YourModel (a pydantic model, list[Item], int, ...)"
_GUARDRAILS = "use output_guardrails=[...] (and input_guardrails=[...] for the input)"
_MEMORY = (
    "memory is set per task and stored on the ensemble: Task(..., memory=['scope']) with "
    "Ensemble(..., memory=SQLiteMemory('memory.sqlite')) (from agentensemble.memory)"
)
_KNOWLEDGE = (
    "use knowledge=[Knowledge(paths=[...])] (from agentensemble.memory) on the Ensemble or a Task"
)
_RATE_LIMIT = (
    "limit the model instead: LLM(model, rate_limit=RateLimit(requests_per_minute=...)), "
    "shared by every agent given that LLM object"
)

_ON_MODEL = (
    "{name} is a setting of the model, not of the {owner}: "
    "{owner}(llm=LLM('openai/gpt-4o-mini', {name}=...)) (from agentensemble import LLM)"
)
#: Sampling settings users pass where CrewAI or PydanticAI take them: they belong on ``LLM``.
MODEL_SETTINGS = ("temperature", "max_tokens", "top_p", "seed", "stop", "frequency_penalty")

#: Where a model is served: settings of ``LLM``, not of the objects that use it.
ENDPOINT_SETTINGS = ("api_base", "base_url", "api_key")

#: Keyword arguments users bring from CrewAI, PydanticAI or the OpenAI Agents SDK.
FOREIGN_NAMES: dict[str, dict[str, str]] = {
    "Agent": {
        **{name: _ON_MODEL.replace("{owner}", "Agent") for name in MODEL_SETTINGS},
        "backstory": _BACKGROUND,
        "expected_output": _ON_TASK,
        "description": "an Agent has role= and goal=; the work goes in Task(description=...)",
        "instructions": "use background=... (or goal=...); the system prompt is built from them",
        "system_prompt": "use background=...; the system prompt is built from role, goal and "
        "background",
        "max_iter": "use max_iterations=...",
        "max_rpm": _RATE_LIMIT,
        "model": _MODEL,
        "output_type": _ON_TASK,
        **{name: _ON_MODEL.replace("{owner}", "Agent") for name in ENDPOINT_SETTINGS},
        "memory": _MEMORY,
        "knowledge": _KNOWLEDGE,
        "knowledge_sources": _KNOWLEDGE,
    },
    "Task": {
        **{
            name: "{name} is a setting of the model: give the task's agent "
            "Agent(..., llm=LLM('openai/gpt-4o-mini', {name}=...)) (from agentensemble import LLM)"
            for name in MODEL_SETTINGS
        },
        "backstory": _ON_AGENT,
        "background": _ON_AGENT,
        "role": _ON_AGENT,
        "goal": _ON_AGENT,
        "output_pydantic": _OUTPUT_TYPE,
        "output_json": _OUTPUT_TYPE,
        "result_type": _OUTPUT_TYPE,
        "guardrail": _GUARDRAILS,
        "guardrails": _GUARDRAILS,
        "human_input": "use review=Review.required() (from agentensemble_review) and "
        "Ensemble(review_handler=...)",
        "max_retries": "use max_output_retries=... (corrections of a typed answer)",
        "guardrail_max_retries": "use max_output_retries=...",
        "llm": "set the model on the agent (Agent(llm=...)) or the ensemble (Ensemble(llm=...))",
        "model": "set the model on the agent (Agent(llm=...)) or the ensemble (Ensemble(llm=...))",
        "max_iterations": "max_iterations belongs on Agent: Agent(..., max_iterations=...) "
        "(the most tool calls in one task)",
        "max_iter": "max_iterations belongs on Agent: Agent(..., max_iterations=...) "
        "(the most tool calls in one task)",
        "agent_role": "use agent=<the Agent object> (in a crew file, agent: <its role or name>)",
        "knowledge_sources": _KNOWLEDGE,
    },
    "Ensemble": {
        **{name: _ON_MODEL.replace("{owner}", "Ensemble") for name in MODEL_SETTINGS},
        "process": "use workflow=Workflow.SEQUENTIAL (the default), PARALLEL or HIERARCHICAL",
        "max_rpm": _RATE_LIMIT,
        "manager_agent": "the manager is built in: give it a model with manager_llm=... and "
        "its workers with agents=[...] (workflow=Workflow.HIERARCHICAL)",
        "model": _MODEL,
        "inputs": "inputs are given when it runs: ensemble.run(inputs={'topic': 'AI'})",
        "knowledge_sources": _KNOWLEDGE,
        **{name: _ON_MODEL.replace("{owner}", "Ensemble") for name in ENDPOINT_SETTINGS},
    },
    "Loop": {
        "max_iter": "use max_iterations=...",
        "condition": "use until=lambda state: ... (state is a LoopState; true ends the loop)",
    },
}

#: Methods of other frameworks' crew objects, by the name users try first.
FOREIGN_METHODS: dict[str, str] = {
    "kickoff": "use run(inputs={...}) (or await arun(inputs={...}))",
    "kickoff_async": "use await arun(inputs={...})",
    "kickoff_for_each": "call run(inputs={...}) once per inputs dict",
    "run_sync": "use run(inputs={...}); arun(...) is the async form",
}


class AgentEnsembleWarning(UserWarning):
    """Base of agentensemble's warnings: legal, but probably not what was meant."""


class MissingContextWarning(AgentEnsembleWarning):
    """A task seems to use an earlier task's output but lists no ``context``."""


class ToolExceptionWarning(AgentEnsembleWarning):
    """A tool raised an unexpected exception; the model got it as an error and the run went on.
    Shown once per raising line, located at the tool's line. Silence with
    ``warnings.filterwarnings("ignore", category=ToolExceptionWarning)``."""


class ToolDescriptionWarning(AgentEnsembleWarning):
    """A tool has no description, so the model is told nothing about when to use it."""


def reject_foreign_names(model: type[Any], data: Any) -> Any:
    """For a ``mode="before"`` validator: a known foreign keyword, or one value where a setting
    takes a list (``context=task``), raises one error saying what to write."""
    if not isinstance(data, Mapping):
        return data
    reject_single_values(model, data)
    table = FOREIGN_NAMES.get(model.__name__, {})
    fields = getattr(model, "model_fields", {})
    hints = [
        f"{model.__name__} has no field {name!r}: {advice}"
        for name in data
        if isinstance(name, str) and name not in fields
        for advice in [_advice(name, table, fields)]
        if advice
    ]
    if hints:
        raise ValueError("; ".join(hints))
    return data


def _advice(name: str, table: Mapping[str, str], fields: Mapping[str, Any]) -> str | None:
    """What to write instead of an unknown keyword: the foreign name's hint, or the field it is
    a misspelling of (``contxt`` -> ``context``); None when neither is known."""
    if name in table:
        return table[name].replace("{name}", name)
    close = difflib.get_close_matches(name, list(fields), n=1, cutoff=0.8)
    return f"did you mean {close[0]}=...?" if close else None


def _takes_a_list(annotation: Any) -> bool:
    if get_origin(annotation) is list or annotation is list:
        return True
    return any(_takes_a_list(arg) for arg in get_args(annotation) if arg is not type(None))


def _label(value: Any) -> str:
    """How to show ``value`` inside ``[...]``: its name when it has one."""
    if isinstance(value, str):
        return repr(value[:40])
    for attribute in ("name", "__name__", "role"):
        label = getattr(value, attribute, None)
        if isinstance(label, str) and label.isidentifier():
            return label
    return "..."


def reject_single_values(model: type[Any], data: Mapping[str, Any]) -> None:
    """``Task(context=research)`` gives pydantic a dozen errors about tuples; say it once: a
    setting that takes a list got one value, and how to write it."""
    fields = getattr(model, "model_fields", {})
    for name, value in data.items():
        field = fields.get(name) if isinstance(name, str) else None
        if field is None or value is None or isinstance(value, (list, tuple, set, frozenset)):
            continue
        if _takes_a_list(field.annotation):
            shown = _label(value)
            raise ValueError(
                f"{model.__name__}({name}=...) takes a list, got one {type(value).__name__}: "
                f"write {name}=[{shown}]"
            )


def method_hint(owner: str, name: str) -> str | None:
    """The AttributeError text for a foreign method name, or None if unknown."""
    hint = FOREIGN_METHODS.get(name)
    return f"'{owner}' object has no attribute {name!r}: {hint}" if hint else None


def check_inputs(inputs: Any) -> dict[str, Any]:
    """``run(inputs=...)`` takes a mapping of template variables; say so for anything else."""
    if inputs is None:
        return {}
    if isinstance(inputs, Mapping):
        return dict(inputs)
    example = "inputs={'topic': 'AI'}"
    if isinstance(inputs, (list, tuple)) and all(isinstance(i, Mapping) for i in inputs):
        raise TypeError(
            f"inputs must be one dict of template variables ({example}), got a "
            f"{type(inputs).__name__} of dicts: call run() once per dict"
        )
    raise TypeError(
        f"inputs must be a dict of template variables such as {example}, "
        f"got {type(inputs).__name__}"
    )


@functools.cache
def _back_reference() -> re.Pattern[str]:
    """Words pointing back at an earlier task; compiled on the first check of a run with more
    than one task, not at import."""
    return re.compile(
        r"\b(?:previous|prior|preceding|earlier|above|last)\s+"
        r"(?:tasks?|steps?|outputs?|results?|research|drafts?|findings|answers?|analysis|summary)\b"
        r"|\b(?:the|this|that)\s+above\b|\bfrom above\b",
        re.IGNORECASE,
    )


def missing_context(tasks: Sequence[Any]) -> list[str]:
    """Tasks after the first, with no ``context``, whose description or expected output
    names an earlier task (by ``name``) or points back ("the previous task", "the research
    above", "earlier results", ...): one line each, saying what to add."""
    found: list[str] = []
    for index, task in enumerate(tasks):
        if index == 0 or task.context:
            continue
        text = f"{task.description}\n{task.expected_output}"
        earlier = [t for t in tasks[:index] if t.name]
        named = [  # the name as a whole word, also names such as "c++" that end in a symbol
            t for t in earlier if re.search(rf"(?<!\w){re.escape(t.name)}(?!\w)", text, re.I)
        ]
        if named or _back_reference().search(text):
            source = named[-1] if named else tasks[index - 1]
            if source.name:
                fix = f"add context=[{source.name}]"
            else:
                number = tasks.index(source) + 1
                fix = f"add that Task (task {number}, {source.label!r}) to context=[...]"
            found.append(
                f"task {index + 1} ({task.label!r}) mentions an earlier task's output but has "
                f"no context, so it will not see it: {fix}"
            )
    return found


@functools.cache
def _not_the_user() -> tuple[str, ...]:
    """Where frames that are not the user's come from: our packages, the standard library and
    installed packages. Resolved on the first warning, not at import (``sysconfig`` and the
    path resolution cost a few milliseconds)."""
    ours = (
        str(Path(__file__).resolve().parents[1] / name) + os.sep
        for name in ("agentensemble", "agentensemble_review", "agentensemble_web")
    )
    libraries = (
        str(Path(path).resolve()) + os.sep
        for path in {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib")}
    )
    return ("<frozen", *ours, *libraries)


UserLine = tuple[str, int, dict[str, Any]]
#: The user's line that called ``Ensemble.run()``, for warnings raised on the background loop.
CALLER: ContextVar[UserLine | None] = ContextVar("agentensemble_caller", default=None)


def user_line(skip: int = 1) -> UserLine | None:
    """(file, line, module globals) of the innermost caller outside agentensemble, the standard
    library and installed packages (asyncio, pydantic); None when there is none in this thread."""
    frame: Any = sys._getframe(skip)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_not_the_user()):
            return filename, _line_of(frame), frame.f_globals
        frame = frame.f_back
    return None


_LINES: dict[tuple[int, int], tuple[Any, int]] = {}
_LINES_KEPT = 256


def _line_of(frame: Any) -> int:
    """``frame.f_lineno``, kept per code object and instruction: Python finds a line by reading
    the code's line table from its start, so from the bottom of a long script (a ``run()`` at
    module level after 3,000 lines) it cost about 26 us on every ``run()``. Keyed by the code's
    id (hashing a code object hashes all its constants), the code itself held and compared so
    an id reused by other code is never mistaken for it. Bounded: code made on the fly (``exec``
    in a loop) is not held for ever."""
    code = frame.f_code
    key = (id(code), frame.f_lasti)
    kept = _LINES.get(key)
    if kept is not None and kept[0] is code:
        return kept[1]
    line: int = frame.f_lineno  # as before: whatever the frame says
    if len(_LINES) >= _LINES_KEPT:
        _LINES.clear()
    _LINES[key] = (code, line)
    return line


def warn_at_user(message: str, category: type[Warning]) -> None:
    """Warn located at the user's line, not at our own code: the caller in this thread, or the
    line that called ``run()`` when the run goes on the background loop."""
    where = user_line(2) or CALLER.get()
    if where is None:
        warnings.warn(message, category, stacklevel=2)
        return
    filename, lineno, module_globals = where
    warnings.warn_explicit(
        message,
        category,
        filename=filename,
        lineno=lineno,
        module=str(module_globals.get("__name__", "<unknown>")),
        registry=module_globals.setdefault("__warningregistry__", {}),
        module_globals=module_globals,
    )


def warn_missing_context(tasks: Sequence[Any]) -> None:
    """One ``MissingContextWarning`` at run start listing every such task."""
    found = missing_context(tasks)
    if found:
        warn_at_user(
            "; ".join(found) + ". (Silence with warnings.filterwarnings('ignore', "
            "category=MissingContextWarning) when this is intended.)",
            MissingContextWarning,
        )


def warn_undescribed_tool(name: str, kind: str) -> None:
    """A ``ToolDescriptionWarning`` naming the tool with an empty description."""
    warn_at_user(
        f"Tool {name!r} ({kind}) has no description, so the model is not told what it does: "
        "give the function a docstring, or pass @tool(description=...) / set description",
        ToolDescriptionWarning,
    )


__all__ = [
    "CALLER",
    "ENDPOINT_SETTINGS",
    "FOREIGN_METHODS",
    "FOREIGN_NAMES",
    "MODEL_SETTINGS",
    "AgentEnsembleWarning",
    "MissingContextWarning",
    "ToolDescriptionWarning",
    "ToolExceptionWarning",
    "check_inputs",
    "method_hint",
    "missing_context",
    "reject_foreign_names",
    "reject_single_values",
    "user_line",
    "warn_at_user",
    "warn_missing_context",
    "warn_undescribed_tool",
]
