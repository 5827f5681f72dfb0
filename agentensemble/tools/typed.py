"""Typed-input tools: the input is a pydantic model; the model's JSON schema is the tool's spec."""

from __future__ import annotations

from typing import Any, Generic, TypeVar, cast, get_args, get_origin

from pydantic import BaseModel

from agentensemble.errors import ConfigurationError
from agentensemble.tools.instrumented import InstrumentedTool
from agentensemble.tools.schema import model_parameters_schema, validate_arguments

ModelT = TypeVar("ModelT", bound=BaseModel)


class TypedAgentTool(InstrumentedTool[ModelT], Generic[ModelT]):
    """An instrumented tool whose input is a pydantic model.

    Subclass ``TypedAgentTool[MyInput]`` (``input_model`` is then inferred; setting it as a class
    attribute also works) and implement ``do_execute(self, input: MyInput)`` or
    ``async def ado_execute``. The spec's ``parameters`` is ``MyInput``'s JSON schema; the model's
    arguments are validated into ``MyInput`` before the body runs (bad arguments → a failure
    naming the bad fields). Called with a string — as a pipeline step — the string is parsed as
    JSON into the model the same way. Instrumented like AbstractAgentTool (metrics, logging,
    approval: the reviewer sees, and may edit, the JSON text).
    """

    input_model: type[ModelT]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "input_model" in cls.__dict__:
            return
        for base in cls.__dict__.get("__orig_bases__", ()):
            origin = get_origin(base)
            if isinstance(origin, type) and issubclass(origin, TypedAgentTool):
                (argument,) = get_args(base)
                if isinstance(argument, type) and issubclass(argument, BaseModel):
                    cls.input_model = cast("type[ModelT]", argument)

    def parameters_schema(self) -> dict[str, Any]:
        return model_parameters_schema(self._model())

    def _parse_input(self, raw: str) -> ModelT:
        return validate_arguments(self._model(), raw, self.name)

    def _model(self) -> type[ModelT]:
        model = getattr(self, "input_model", None)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise ConfigurationError(
                f"{type(self).__name__} has no input_model: subclass TypedAgentTool[YourModel] "
                "or set input_model = YourModel"
            )
        return cast("type[ModelT]", model)


__all__ = ["TypedAgentTool"]
