"""The outputs' defaults: fresh private lists however an output is built, shared zero usage."""

from __future__ import annotations

import pytest
from pydantic import PrivateAttr, ValidationError

from agentensemble.llm.types import ChatResponse
from agentensemble.outputs import EnsembleOutput, TaskOutput, TokenUsage, no_usage

PRIVATE = {"_extra_costs": [], "_tasks": [], "_steps": []}


def _ways() -> list[EnsembleOutput]:
    built = EnsembleOutput(raw="r", task_outputs=[])
    return [
        built,
        EnsembleOutput.model_validate({"raw": "r", "task_outputs": []}),
        EnsembleOutput.model_validate_json(built.model_dump_json()),
        EnsembleOutput.model_construct(raw="r", task_outputs=[]),
    ]


def test_every_way_of_building_an_ensemble_output_gives_fresh_private_lists() -> None:
    outputs = _ways()
    for output in outputs:
        assert output.__pydantic_private__ == PRIVATE
    lists = [value for output in outputs for value in output.__pydantic_private__.values()]
    assert len({id(value) for value in lists}) == len(lists)  # never shared between outputs
    first, second = outputs[0], outputs[1]
    first._tasks.append("a task")
    assert second._tasks == [] and second.output_for("a task") is None


def test_a_copy_keeps_the_private_attributes_as_pydantic_copies_them() -> None:
    output = EnsembleOutput(raw="r", task_outputs=[])
    output._extra_costs.append(0.5)
    copied = output.model_copy(update={"run_id": "x"})
    assert copied.__pydantic_private__ == {**PRIVATE, "_extra_costs": [0.5]}


def test_a_subclass_with_private_attributes_of_its_own_gets_all_of_them() -> None:
    class Mine(EnsembleOutput):
        _note: str = PrivateAttr(default="kept")

    class Plain(EnsembleOutput):
        pass

    assert Mine(raw="r", task_outputs=[]).__pydantic_private__ == {**PRIVATE, "_note": "kept"}
    assert Plain(raw="r", task_outputs=[]).__pydantic_private__ == PRIVATE


def test_no_usage_is_one_shared_frozen_zero() -> None:
    zero = no_usage()
    assert zero is no_usage() and zero == TokenUsage() and type(zero) is TokenUsage
    with pytest.raises(ValidationError):
        zero.prompt_tokens = 5  # type: ignore[misc]
    assert ChatResponse().usage is zero
    assert TaskOutput(raw="r", task_description="d", agent_role="a").usage is zero
    assert EnsembleOutput(raw="r", task_outputs=[]).usage is zero
    more = TokenUsage(prompt_tokens=2, completion_tokens=1, total_tokens=3)
    assert zero + more is more and more + zero is more and no_usage() == TokenUsage()
