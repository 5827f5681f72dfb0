"""What the built-in tools share: typed input, an optional name override, refusals as failures."""

from __future__ import annotations

from typing import Generic, NoReturn, TypeVar

from pydantic import BaseModel

from agentensemble._base.naming import tool_name_problem
from agentensemble.errors import ConfigurationError, ToolExecutionError
from agentensemble.tools.typed import TypedAgentTool

ModelT = TypeVar("ModelT", bound=BaseModel)


class BuiltinTool(TypedAgentTool[ModelT], Generic[ModelT]):
    """A built-in tool: typed arguments the model sees by name, instrumented like every tool.

    ``name=`` renames one instance (two FileRead tools on two roots need two names).
    """

    default_name: str = ""

    def _init_name(self, name: str | None) -> None:
        chosen = self.default_name if name is None else name
        problem = tool_name_problem(chosen)
        if problem:
            raise ConfigurationError(f"{type(self).__name__}: name: {problem}")
        self.name = chosen


def refuse(message: str) -> NoReturn:
    """Stop this call with a failed result the model reads as ``Error: <message>``."""
    raise ToolExecutionError(message)


__all__ = ["BuiltinTool", "refuse"]
