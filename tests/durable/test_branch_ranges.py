"""The step numbers of concurrent branches: reserved in call order from the current range, the
same on every replay, nested branches inside their branch, and a clear error, never a reused
number, when a range has no room left (no database needed: the numbering is arithmetic)."""

from __future__ import annotations

import contextvars
import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentensemble.durable._steps import (
    MIN_BRANCH_STEPS,
    _branch,
    _run_steps,
    _RunSteps,
    branch_ranges,
)
from agentensemble.errors import ConfigurationError
from agentensemble.run_context import enter_task

TASK = 1 << 20


@dataclass
class FakeContext:
    """The fields of a DBOS context the numbering reads and writes."""

    workflow_id: str = "run-1"
    function_id: int = 0
    curr_step_function_id: int = -1
    context_spans: list[Any] = field(default_factory=list)


def reserve(counts: list[int], *, nested: int | None = None) -> list[list[tuple[int, int]]]:
    """Reserve a turn of branches per count in task 1 (then, with ``nested``, a turn inside the
    first branch of the last turn); each branch as (first step number, end)."""

    def run() -> list[list[tuple[int, int]]]:
        _run_steps.set(_RunSteps(FakeContext()))
        enter_task(1)
        turns = []
        for count in counts:
            found = branch_ranges(count)
            assert found is not None
            turns.append([(b.context.function_id + 1, b.end) for b in found])
        if nested is not None:
            _branch.set(found[0])
            inner = branch_ranges(nested)
            assert inner is not None
            turns.append([(b.context.function_id + 1, b.end) for b in inner])
        return turns

    return contextvars.copy_context().run(run)


def test_each_branch_gets_a_sixty_fourth_of_what_is_left_in_call_order() -> None:
    [first] = reserve([2])
    left = TASK - 8 - 1
    size = left // 64
    assert size == 16383
    assert first == [(TASK + 1, TASK + 1 + size), (TASK + 1 + size, TASK + 1 + 2 * size)]
    assert reserve([2]) == [first]  # a replay reserves the very same numbers


@pytest.mark.parametrize(
    ("counts", "nested"),
    [([2, 3, 2], None), ([9], None), ([4], 3), ([2, 2], 2)],
)
def test_ranges_never_overlap_and_stay_in_their_task(counts: list[int], nested: int | None) -> None:
    turns = reserve(counts, nested=nested)
    flat = sorted(r for turn in turns[: len(counts)] for r in turn)
    for (_, end), (start, _) in itertools.pairwise(flat):
        assert end <= start
    assert all(TASK < start < end <= 2 * TASK for start, end in flat)
    if nested is not None:  # the nested turn lies inside the branch it runs in
        outer_start, outer_end = turns[len(counts) - 1][0]
        assert all(outer_start <= s < e <= outer_end for s, e in turns[-1])


def test_a_range_with_no_room_left_is_a_clear_error() -> None:
    assert len(reserve([2] * 175)) == 175  # many concurrent turns fit in one task
    with pytest.raises(ConfigurationError, match="no room left for 2 concurrent calls"):
        reserve([2] * 176)
    assert MIN_BRANCH_STEPS == 64
