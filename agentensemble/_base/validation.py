"""Small validators shared by the public models (Agent, Task, Ensemble)."""

from __future__ import annotations

import inspect
from typing import Any


def require_text(value: str, field: str) -> str:
    """Reject blank strings; the message names the field."""
    if not value or not value.strip():
        raise ValueError(f"{field} must be a non-blank string")
    return value


def instance_hint(cls: type) -> str:
    """How to make an instance of ``cls``: ``Name()``, or ``Name(model=...)`` naming what
    its constructor requires."""
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return f"{cls.__name__}(...)"
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    required = [p.name for p in parameters if p.default is p.empty and p.kind not in variadic]
    return f"{cls.__name__}({', '.join(f'{name}=...' for name in required)})"


def refuse_class(value: Any, field: str) -> None:
    """A class where an instance is expected would be accepted (its methods exist) and fail
    late, at the first call: refuse it now, naming the fix."""
    if isinstance(value, type):
        raise ValueError(
            f"{field} got the class {value.__name__}, not an instance; "
            f"pass an instance: {instance_hint(value)}"
        )


def check_model(value: Any) -> Any:
    """Accept a litellm model name, an ``LLM`` or any ChatModel (async ``complete``)."""
    if value is None:
        return None
    refuse_class(value, "llm")
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("llm must be a model name such as 'openai/gpt-4o-mini', not blank")
        return value
    complete = getattr(value, "complete", None)
    if complete is None or not inspect.iscoroutinefunction(complete):
        raise ValueError(
            f"llm must be a model name, an LLM or a ChatModel with an async complete(); "
            f"got {type(value).__name__}"
        )
    return value


def check_instructions(value: Any) -> Any:
    """An agent's ``instructions``: None, text, or a function taking the run context (sync or
    async); anything else is refused, naming the field."""
    if value is None or isinstance(value, str):
        return value
    refuse_class(value, "instructions")
    if not callable(value):
        raise ValueError(
            f"instructions must be text or a function (context) -> str; got {type(value).__name__}"
        )
    try:
        inspect.signature(value).bind(None)
    except TypeError:
        raise ValueError(
            "instructions must be a function taking one argument (the RunContext); "
            f"{getattr(value, '__name__', type(value).__name__)} does not"
        ) from None
    except ValueError:  # a builtin without a signature: called as it is
        pass
    return value


def check_review(value: Any, field: str) -> Any:
    """A task-level review must be an ``agentensemble_review.Review`` (imported only if given)."""
    if value is None:
        return None
    from agentensemble_review import Review  # only reached when a review is configured

    if not isinstance(value, Review):
        raise ValueError(
            f"{field} must be Review.required(...) or Review.skip(), got {type(value).__name__}"
        )
    return value
