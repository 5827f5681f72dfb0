"""The immediate-return rule, pinned against the full table of API.md section 4."""

from __future__ import annotations

import pytest

from agentensemble.tools import ReturnBehavior, should_return_immediately

T = ReturnBehavior.TO_LLM
I = ReturnBehavior.IMMEDIATE  # noqa: E741 - the table's own letter
L = ReturnBehavior.IMMEDIATE_IF_LAST

RETURN, REPROCESS = True, False

# The 18 rows of the API table: one model response, no failure.
MATRIX = [
    ((T,), REPROCESS),
    ((T, T), REPROCESS),
    ((I,), RETURN),
    ((I, I), RETURN),
    ((T, I), REPROCESS),
    ((I, T), REPROCESS),
    ((L,), RETURN),
    ((L, L), RETURN),
    ((T, L), RETURN),
    ((L, T), REPROCESS),
    ((I, L), RETURN),
    ((L, I), RETURN),
    ((T, I, L), RETURN),
    ((T, L, I), REPROCESS),
    ((I, T, L), RETURN),
    ((I, L, T), REPROCESS),
    ((L, T, I), REPROCESS),
    ((L, I, T), REPROCESS),
]


def _label(behaviors: tuple[ReturnBehavior, ...]) -> str:
    letters = {T: "T", I: "I", L: "L"}
    return ",".join(letters[b] for b in behaviors)


def test_the_matrix_has_all_eighteen_rows() -> None:
    assert len(MATRIX) == 18
    assert len({row for row, _ in MATRIX}) == 18


@pytest.mark.parametrize(("behaviors", "expected"), MATRIX, ids=[_label(r) for r, _ in MATRIX])
def test_matrix_without_failure(behaviors: tuple[ReturnBehavior, ...], expected: bool) -> None:
    assert should_return_immediately(behaviors, any_failed=False) is expected


@pytest.mark.parametrize(("behaviors", "_"), MATRIX, ids=[_label(r) for r, _ in MATRIX])
def test_any_failure_means_reprocess(behaviors: tuple[ReturnBehavior, ...], _: bool) -> None:
    assert should_return_immediately(behaviors, any_failed=True) is False


def test_no_calls_never_return() -> None:
    assert should_return_immediately([], any_failed=False) is False
    assert should_return_immediately([], any_failed=True) is False


@pytest.mark.parametrize(
    ("behaviors", "expected"),
    [
        ([T, T, T, L], RETURN),  # the last call decides when it is IMMEDIATE_IF_LAST
        ([I, I, I, I], RETURN),
        ([I, L, I, L, I], RETURN),  # all immediate of either kind
        ([I, I, I, T], REPROCESS),
        ([L, L, L, T], REPROCESS),
    ],
)
def test_longer_responses_follow_the_same_rule(
    behaviors: list[ReturnBehavior], expected: bool
) -> None:
    assert should_return_immediately(behaviors, any_failed=False) is expected
