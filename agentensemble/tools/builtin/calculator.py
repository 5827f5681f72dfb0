"""Calculator: arithmetic by walking the expression's syntax tree — never ``eval``.

Only numbers, ``+ - * / // % **``, parentheses and a few math functions are understood. Sizes
are bounded so a model cannot make the process spin or eat memory: the expression's length, the
exponent, and every intermediate integer's size.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, Field

from agentensemble.tools.builtin._base import BuiltinTool, refuse

MAX_EXPRESSION_CHARS = 500
MAX_EXPONENT = 10_000
MAX_INTEGER_BITS = 4_096  # about 1233 decimal digits

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., Number]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "floor": math.floor,
    "ceil": math.ceil,
}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}


class CalculatorInput(BaseModel):
    expression: Annotated[
        str,
        Field(description="An arithmetic expression, e.g. '(2 + 3) * 4 ** 2 / sqrt(16)'"),
    ]


def evaluate(expression: str) -> Number:
    """The value of ``expression``; raises ToolExecutionError saying what is not allowed."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        refuse(f"expression is {len(expression)} characters long; at most {MAX_EXPRESSION_CHARS}")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        refuse(f"not a valid expression: {getattr(error, 'msg', None) or error}")
    try:
        value = _eval(tree.body)
    except ZeroDivisionError:
        refuse("division by zero")
    except (OverflowError, MemoryError):
        refuse("the result is too large")
    except RecursionError:
        refuse("the expression is nested too deeply")
    except (ValueError, TypeError) as error:
        refuse(f"math error: {error}")
    if isinstance(value, float) and not math.isfinite(value):
        refuse("the result is not a finite number")
    return value


def _eval(node: ast.AST) -> Number:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            refuse(f"only numbers are allowed, got {node.value!r}")
        return _checked(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        if isinstance(node.op, ast.Mult) and _bits(left) + _bits(right) > MAX_INTEGER_BITS:
            refuse("the result is too large")
        return _checked(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _checked(_UNARY[type(node.op)](_eval(node.operand)))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        function = _FUNCTIONS.get(node.func.id)
        if function is None or node.keywords or len(node.args) > 10:
            refuse(f"unknown function {node.func.id!r}; allowed: {', '.join(_FUNCTIONS)}")
        return _checked(function(*(_eval(argument) for argument in node.args)))
    what = node.id if isinstance(node, ast.Name) else type(node).__name__
    refuse(f"{what!s} is not allowed; use numbers, + - * / // % **, parentheses, functions")


def _check_power(base: Number, exponent: Number) -> None:
    if abs(exponent) > MAX_EXPONENT:
        refuse(f"exponent {exponent} is too large; at most {MAX_EXPONENT}")
    if isinstance(exponent, int) and abs(base) > 1 and _bits(base) * exponent > MAX_INTEGER_BITS:
        refuse("the result is too large")


def _bits(value: Number) -> int:
    """An integer's size in bits (0 for floats: their overflow raises OverflowError)."""
    return value.bit_length() if isinstance(value, int) else 0


def _checked(value: Any) -> Number:
    if isinstance(value, int) and value.bit_length() > MAX_INTEGER_BITS:
        refuse("the result is too large")
    if isinstance(value, complex):
        refuse("the result is not a real number")
    result: Number = value
    return result


def render(value: Number) -> str:
    """Integers exactly; floats with up to 15 significant digits (``0.1 + 0.2`` → ``0.3``)."""
    if isinstance(value, int):
        return str(value)
    return format(value, ".15g")


class Calculator(BuiltinTool[CalculatorInput]):
    """Evaluate an arithmetic expression exactly (numbers, + - * / // % **, parentheses,
    sqrt, exp, log, log10, sin, cos, tan, floor, ceil, abs, round, min, max, pi, e)."""

    default_name = "calculator"

    def __init__(self, *, name: str | None = None) -> None:
        self._init_name(name)
        self.description = (
            "Evaluate an arithmetic expression exactly: numbers, + - * / // % ** and "
            "parentheses, functions sqrt, exp, log, log10, sin, cos, tan, floor, ceil, abs, "
            "round, min, max and constants pi, e, tau."
        )

    def do_execute(self, input: CalculatorInput) -> str:
        return render(evaluate(input.expression))


__all__ = ["Calculator", "CalculatorInput", "evaluate"]
