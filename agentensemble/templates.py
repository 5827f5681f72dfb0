"""Template filling: ``{name}`` takes its value from the run's inputs; ``{{`` and ``}}`` are braces.

A variable is an identifier in single braces. Any other brace text (JSON examples, say) is left
as written. Values are inserted in one pass and never re-templated. A variable holding an
``Image`` / ``Document`` / ``Audio`` renders as ``[attachment: NAME]`` (its name, else its
file's, else the variable's), and ``attachments_in`` gives the attachments the texts name, to
send with them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from agentensemble.attachments import Attachment, distinct, named_for
from agentensemble.errors import PromptTemplateError

_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def template_variables(text: str) -> list[str]:
    """Variable names used in ``text``, in order of first use, without duplicates."""
    if "{" not in text:  # no variable can be there: most texts, on every run
        return []
    names: dict[str, None] = {}
    for match in _TOKEN.finditer(text):
        if match.group(1):
            names.setdefault(match.group(1))
    return list(names)


def missing_variables(texts: Iterable[str], inputs: Mapping[str, Any]) -> list[str]:
    """Every variable used in ``texts`` that ``inputs`` does not provide, sorted."""
    return sorted({name for text in texts for name in template_variables(text)} - set(inputs))


def fill_template(text: str, inputs: Mapping[str, Any]) -> str:
    """Fill ``text`` from ``inputs``; raises PromptTemplateError naming every missing variable."""
    if "{" not in text and "}" not in text:  # nothing to fill and no brace to unescape
        return text
    missing = missing_variables([text], inputs)
    if missing:
        raise PromptTemplateError(missing)

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return match.group(0)[0]
        value = inputs[name]
        if isinstance(value, str):
            return value
        if isinstance(value, Attachment):
            return str(named_for(value, name))
        return str(value)

    return _TOKEN.sub(replace, text)


def attachments_in(texts: Iterable[str], inputs: Mapping[str, Any]) -> list[Attachment]:
    """The attachments the variables of ``texts`` hold, in order of first use, each named as
    its ``[attachment: NAME]`` says (``attachments.named_for``)."""
    found: dict[str, Attachment] = {}
    for text in texts:
        for name in template_variables(text):
            value = inputs.get(name)
            if isinstance(value, Attachment) and name not in found:
                found[name] = named_for(value, name)
    return list(found.values())


def task_attachments(task: Any, inputs: Mapping[str, Any]) -> list[Attachment]:
    """What goes with a task's request: the attachments its texts name (first: the text names
    them so), then its own ``attachments``, each name told apart (``attachments.distinct``)."""
    named = attachments_in((task.description, task.expected_output), inputs)
    return distinct([*named, *task.attachments])


__all__ = [
    "attachments_in",
    "fill_template",
    "missing_variables",
    "task_attachments",
    "template_variables",
]
