"""Conditions in crew files: a loop's ``until`` and a graph edge's ``when``, in a small safe
syntax. Parsed once when the file is loaded (errors name the file and line); never ``eval``.

```text
critique.approved == true            a typed output's field compared with a value
critique.score >= 8                  ==  !=  <  <=  >  >=  with numbers, 'text', true/false/null
answer contains 'NEEDS MORE'         an output's text contains a marker (not contains: absent)
critique.approved                    a field that is true
review contains 'LGTM' or iteration >= 3     and / or (and binds tighter; no parentheses)
```

A name is a step's output: in a loop's ``until`` a body step's name (this iteration) or
``last`` (the body's last output); in a graph edge's ``when`` ``output`` (the state that just
ran) or a state's name (its latest output). ``iteration`` (loops) and ``step`` (graphs) are
numbers. A name alone is the output's text; ``name.field.sub`` reads its typed output (a
field that does not exist fails the run, naming it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

MAX_CONDITION_LENGTH = 500
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
      | (?P<number>-?\d+(?:\.\d+)?)
      | (?P<op>==|!=|<=|>=|<|>)
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
    )""",
    re.VERBOSE,
)
_KEYWORDS = {"and", "or", "not", "contains", "true", "false", "null"}
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": lambda a, b: bool(a == b),
    "!=": lambda a, b: bool(a != b),
    "<": lambda a, b: bool(a < b),
    "<=": lambda a, b: bool(a <= b),
    ">": lambda a, b: bool(a > b),
    ">=": lambda a, b: bool(a >= b),
}


class ConditionError(ValueError):
    """A condition that cannot be parsed, or names something unknown."""


@dataclass(frozen=True)
class _Token:
    kind: str  # string, number, op, name, keyword
    text: str


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None:
            raise ConditionError(f"cannot read {text[position:].strip()[:30]!r}")
        kind = match.lastgroup or ""
        value = match.group(kind)
        if kind == "name" and value in _KEYWORDS:
            kind = "keyword"
        tokens.append(_Token(kind, value))
        position = match.end()
    return tokens


Reader = Callable[[Any], Any]  # the predicate's state -> a value


class Condition:
    """A parsed condition: call it with a ``LoopState`` or a ``GraphState``."""

    def __init__(self, text: str, names: Sequence[str], numbers: Sequence[str]) -> None:
        if len(text) > MAX_CONDITION_LENGTH:
            raise ConditionError(f"a condition is at most {MAX_CONDITION_LENGTH} characters")
        self.text = text
        self._names = set(names)
        self._numbers = set(numbers)
        self._tokens = _tokens(text)
        self._at = 0
        if not self._tokens:
            raise ConditionError("the condition is empty")
        self._test = self._or()
        if self._at != len(self._tokens):
            raise ConditionError(f"unexpected {self._tokens[self._at].text!r}")

    def __call__(self, state: Any) -> bool:
        return self._test(state)

    def __repr__(self) -> str:
        return f"Condition({self.text!r})"

    # -- parsing -----------------------------------------------------------------------------

    def _peek(self) -> _Token | None:
        return self._tokens[self._at] if self._at < len(self._tokens) else None

    def _take(self) -> _Token:
        token = self._peek()
        if token is None:
            raise ConditionError("the condition ends too early")
        self._at += 1
        return token

    def _keyword(self, word: str) -> bool:
        token = self._peek()
        if token is not None and token.kind == "keyword" and token.text == word:
            self._at += 1
            return True
        return False

    def _or(self) -> Callable[[Any], bool]:
        parts = [self._and()]
        while self._keyword("or"):
            parts.append(self._and())
        return parts[0] if len(parts) == 1 else lambda s: any(p(s) for p in parts)

    def _and(self) -> Callable[[Any], bool]:
        parts = [self._comparison()]
        while self._keyword("and"):
            parts.append(self._comparison())
        return parts[0] if len(parts) == 1 else lambda s: all(p(s) for p in parts)

    def _comparison(self) -> Callable[[Any], bool]:
        read = self._reference()
        negate = self._keyword("not")
        if self._keyword("contains"):
            quoted = self._take()
            if quoted.kind != "string":
                raise ConditionError(f"contains takes a quoted text, got {quoted.text!r}")
            marker = _unquote(quoted.text)
            return lambda s: (marker in str(read(s))) != negate
        if negate:
            raise ConditionError("not is only used as 'not contains'")
        token = self._peek()
        if token is None or token.kind != "op":
            if token is not None and token.kind != "keyword":
                raise ConditionError(
                    f"expected ==, !=, <, <=, >, >= or contains, got {token.text!r}"
                )
            return lambda s: bool(read(s))
        self._at += 1
        op = token.text
        compare = _COMPARE[op]
        value = self._literal()
        return lambda s: _compared(compare, read(s), value, op)

    def _literal(self) -> Any:
        token = self._take()
        if token.kind == "string":
            return _unquote(token.text)
        if token.kind == "number":
            return float(token.text) if "." in token.text else int(token.text)
        if token.kind == "keyword" and token.text in _LITERALS:
            return _LITERALS[token.text]
        raise ConditionError(
            f"expected a value ('text', a number, true, false, null), got {token.text!r}"
        )

    def _reference(self) -> Reader:
        token = self._take()
        if token.kind != "name":
            raise ConditionError(f"expected a step name, got {token.text!r}")
        head, *fields = token.text.split(".")
        if head in self._numbers:
            if fields:
                raise ConditionError(f"{head} is a number; it has no fields")
            return lambda s: getattr(s, head)
        if head not in self._names:
            known = ", ".join(sorted(self._names | self._numbers))
            raise ConditionError(f"unknown name {head!r} (known here: {known})")
        return lambda s: _read(s, head, fields)


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text[1:-1])


def _compared(compare: Callable[[Any, Any], bool], left: Any, right: Any, op: str) -> bool:
    try:
        return compare(left, right)
    except TypeError:
        raise ConditionError(f"cannot compare {left!r} {op} {right!r}") from None


def _output_of(state: Any, head: str) -> Any:
    if head in ("output", "last"):
        return getattr(state, head)
    return state.outputs.get(head)


def _read(state: Any, head: str, fields: list[str]) -> Any:
    output = _output_of(state, head)
    if output is None:
        raise ConditionError(f"{head!r} has no output yet")
    if not fields:
        return output.raw
    value: Any = output.parsed
    walked = head
    for name in fields:
        if isinstance(value, dict) and name in value:
            value = value[name]
        elif value is not None and not isinstance(value, dict) and hasattr(value, name):
            value = getattr(value, name)
        else:
            raise ConditionError(f"{walked} has no field {name!r} (is the step's output_type set?)")
        walked += f".{name}"
    return value


def loop_condition(text: str, body_names: Sequence[str]) -> Condition:
    """A loop's ``until``: body step names, ``last`` and ``iteration``."""
    return Condition(text, [*body_names, "last"], ["iteration"])


def edge_condition(text: str, state_names: Sequence[str]) -> Condition:
    """A graph edge's ``when``: state names, ``output`` and ``step``."""
    return Condition(text, [*state_names, "output"], ["step"])


__all__ = [
    "MAX_CONDITION_LENGTH",
    "Condition",
    "ConditionError",
    "edge_condition",
    "loop_condition",
]
