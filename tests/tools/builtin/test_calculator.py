"""Calculator: exact arithmetic by AST walking; hostile expressions are refused, never run."""

from __future__ import annotations

import pytest
from builtin_helpers import call, refused
from hypothesis import given
from hypothesis import strategies as st

from agentensemble.errors import ConfigurationError
from agentensemble.tools.builtin import Calculator


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 + 2 * 3", "7"),
        ("(1 + 2) * 3", "9"),
        ("7 / 2", "3.5"),
        ("7 // 2", "3"),
        ("-7 % 3", "2"),
        ("2 ** 10", "1024"),
        ("0.1 + 0.2", "0.3"),
        ("sqrt(16) + abs(-2)", "6"),
        ("round(pi, 2)", "3.14"),
        ("max(1, 5, 3) - min(4, 2)", "3"),
        ("2 ** 0.5", "1.4142135623731"),
        ("10 ** 100", "1" + "0" * 100),
    ],
)
def test_arithmetic(expression: str, expected: str) -> None:
    result = call(Calculator(), expression=expression)
    assert result.is_success, result.error_message
    assert result.output.startswith(expected)


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ("__import__('os').system('echo pwned')", "not allowed"),
        ("open('/etc/passwd').read()", "not allowed"),
        ("(1).__class__", "not allowed"),
        ("[x for x in range(10**9)]", "not allowed"),
        ("lambda: 1", "not allowed"),
        ("x + 1", "x is not allowed"),
        ("'a' * 10", "only numbers are allowed"),
        ("True + 1", "only numbers are allowed"),
        ("9 ** 9 ** 9", "exponent 387420489 is too large"),
        ("2 ** 100000", "exponent 100000 is too large"),
        ("10 ** 5000", "the result is too large"),
        ("(2 ** 4000) * (2 ** 4000)", "the result is too large"),
        ("2.0 ** 5000", "the result is too large"),
        ("1e308 * 10", "not a finite number"),
        ("1 / 0", "division by zero"),
        ("(-8) ** 0.5", "not a real number"),
        ("sqrt(-1)", "math error"),
        ("1 +", "not a valid expression"),
        ("(" * 400 + "1" + ")" * 400, "expression is 801 characters long"),
        ("eval('1')", "unknown function 'eval'"),
        ("1 << 100000", "not allowed"),
    ],
)
def test_hostile_or_broken_expressions_are_refused(expression: str, why: str) -> None:
    assert refused(call(Calculator(), expression=expression), why)


@given(st.integers(-(10**12), 10**12), st.integers(-(10**12), 10**12))
def test_integer_arithmetic_is_exact(a: int, b: int) -> None:
    assert call(Calculator(), expression=f"{a} * {b} + {a} - ({b})").output == str(a * b + a - b)


def test_a_renamed_calculator_keeps_the_name_rules() -> None:
    assert Calculator(name="math").name == "math"
    with pytest.raises(ConfigurationError, match="must match"):
        Calculator(name="bad name")
