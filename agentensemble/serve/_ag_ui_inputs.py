"""What an AG-UI client sends, checked before any run starts: the ``RunAgentInput`` (validated
with the ``ag-ui-protocol`` package's own model) and the run's inputs made from it.

Everything here is untrusted. The body was already bounded by ``Hardened`` (size, depth, count
of values); this module bounds what the protocol leaves open (how many messages, how long
each, how large ``state`` and ``forwardedProps`` are, how many resume entries) and maps the
input to the crew's template variables:

1. ``forwardedProps.inputs`` and ``state.inputs`` (objects of input name to text, a list of
   texts for a ``for_each`` input) name inputs explicitly; ``forwardedProps`` wins;
2. an input named ``history``, when the crew uses ``{history}`` and the client did not name
   it: the earlier user and assistant messages as a transcript (``user: ...``), the newest
   kept when it is too long;
3. the last user message's text fills the one text input still missing, when exactly one is.

Only ``user`` and ``assistant`` messages are read, as content: a client's ``system`` or
``developer`` message, tool results and ``context`` entries are never instructions to the
agents. Client tools (``tools``) are not offered to the agents.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from agentensemble.serve._shape import MAX_ARGUMENT_CHARS, BadArguments, check_arguments

#: The most messages one request may carry.
MAX_MESSAGES = 200
#: The longest transcript given as ``{history}`` (characters; the newest part is kept).
MAX_HISTORY_CHARS = MAX_ARGUMENT_CHARS
#: The largest ``state`` or ``forwardedProps`` accepted (bytes of its JSON).
MAX_PROPS_BYTES = 64 * 1024
#: The most resume entries one request may carry.
MAX_RESUME = 50
#: The longest thread or run id (characters).
MAX_ID_CHARS = 200
#: The input that receives the earlier conversation, when a crew uses it.
HISTORY_INPUT = "history"


def run_input(body: Any) -> Any:
    """``body`` as an ``ag_ui.core.RunAgentInput``, bounded; ``BadArguments`` naming what is
    wrong otherwise."""
    from ag_ui.core import RunAgentInput

    if not isinstance(body, dict):
        raise BadArguments(
            "the body must be a RunAgentInput JSON object "
            '({"threadId": "...", "runId": "...", "messages": [...]})'
        )
    try:
        given = RunAgentInput.model_validate(body)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or 'body'}: {item['msg']}"
            for item in error.errors()[:5]
        )
        raise BadArguments(f"not a valid RunAgentInput: {problems}") from None
    _check_bounds(given)
    return given


def _check_bounds(given: Any) -> None:
    for name, value in (("threadId", given.thread_id), ("runId", given.run_id)):
        if not value.strip() or len(value) > MAX_ID_CHARS:
            raise BadArguments(f"{name} must be 1 to {MAX_ID_CHARS} characters")
    if len(given.messages) > MAX_MESSAGES:
        raise BadArguments(
            f"the input holds {len(given.messages)} messages; the limit is {MAX_MESSAGES} "
            "(send the recent ones)"
        )
    for index, message in enumerate(given.messages):
        size = len(message_text(message))
        if size > MAX_ARGUMENT_CHARS:
            raise BadArguments(
                f"messages[{index}] is {size} characters long; the limit is {MAX_ARGUMENT_CHARS}"
            )
    for name, value in (("state", given.state), ("forwardedProps", given.forwarded_props)):
        size = len(json.dumps(value)) if value is not None else 0
        if size > MAX_PROPS_BYTES:
            raise BadArguments(f"{name} is {size} bytes; the limit is {MAX_PROPS_BYTES}")
    if given.resume is not None and len(given.resume) > MAX_RESUME:
        raise BadArguments(f"resume holds {len(given.resume)} entries; the limit is {MAX_RESUME}")


def message_text(message: Any) -> str:
    """A message's text: its string content, or its text parts joined (other parts, such as
    images, are not read)."""
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(getattr(part, "text", "")) for part in content)
    return ""


def _named_inputs(given: Any) -> dict[str, Any]:
    named: dict[str, Any] = {}
    for where, source in (("state", given.state), ("forwardedProps", given.forwarded_props)):
        if not isinstance(source, Mapping) or "inputs" not in source:
            continue
        inputs = source["inputs"]
        if not isinstance(inputs, Mapping):
            raise BadArguments(
                f"{where}.inputs must be an object of input names to texts, "
                f"got {type(inputs).__name__}"
            )
        named.update(inputs)
    return named


def _transcript(conversation: list[tuple[str, str]]) -> str:
    lines = [f"{role}: {text}" for role, text in conversation if text]
    text = "\n".join(lines)
    if len(text) > MAX_HISTORY_CHARS:
        text = "... (earlier messages left out)\n" + text[-(MAX_HISTORY_CHARS - 40) :]
    return text


def run_inputs(kinds: Mapping[str, str], given: Any) -> dict[str, Any]:
    """The run's inputs from ``given`` (a checked ``RunAgentInput``) by the rules of the module
    docstring; ``kinds``: the crew's inputs (``_shape.input_kinds``)."""
    named = _named_inputs(given)
    conversation = [
        (message.role, message_text(message))
        for message in given.messages
        if message.role in ("user", "assistant")
    ]
    last_user = max((i for i, (role, _) in enumerate(conversation) if role == "user"), default=-1)
    if HISTORY_INPUT in kinds and HISTORY_INPUT not in named and kinds[HISTORY_INPUT] == "text":
        named[HISTORY_INPUT] = _transcript(conversation[: max(last_user, 0)])
    missing = [name for name, kind in kinds.items() if kind == "text" and name not in named]
    if last_user >= 0 and len(missing) == 1:
        named[missing[0]] = conversation[last_user][1]
    try:
        return check_arguments(kinds, named)
    except BadArguments as error:
        raise BadArguments(
            f"{error} (send inputs as forwardedProps.inputs, an object of input name to text; "
            "a user message fills the one text input not named there)"
        ) from None


__all__ = [
    "HISTORY_INPUT",
    "MAX_HISTORY_CHARS",
    "MAX_MESSAGES",
    "MAX_PROPS_BYTES",
    "MAX_RESUME",
    "message_text",
    "run_input",
    "run_inputs",
]
