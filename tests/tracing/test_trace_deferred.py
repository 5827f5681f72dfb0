"""A run's trace is validated on its first read (``agentensemble/_base/deferred.py``): every way to
reach ``EnsembleOutput.trace`` gives what an output holding the validated trace gives."""

from __future__ import annotations

import copy
import json
import pickle
import threading
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict
from pydantic_core import to_jsonable_python

from agentensemble import Agent, Ensemble, EnsembleOutput, ExecutionTrace, Task, tool
from agentensemble._base.deferred import Deferred
from agentensemble._base.saveable import jsonable
from agentensemble.testing import ScriptedChatModel, tool_call


@tool
def lookup(city: str) -> str:
    """Look up the weather of a city."""
    return f"Sunny in {city}"


def run(**settings: Any) -> EnsembleOutput:
    model = ScriptedChatModel([tool_call("lookup", {"city": "Oslo"}), "Sunny in Oslo"])
    agent = Agent(role="Forecaster", goal="Forecast", tools=[lookup])
    task = Task(description="Forecast {city}", expected_output="One line", agent=agent)
    return Ensemble(tasks=[task], llm=model, **settings).run({"city": "Oslo"})  # type: ignore[arg-type]


def deferred(output: EnsembleOutput) -> bool:
    return type(output.__dict__["trace"]) is Deferred


def test_a_run_leaves_its_trace_to_the_first_read_which_keeps_it() -> None:
    output = run()
    assert deferred(output)
    trace = output.trace
    assert isinstance(trace, ExecutionTrace)
    assert output.trace is trace and output.__dict__["trace"] is trace
    assert trace.tasks[0].tool_calls[0].output == "Sunny in Oslo"
    assert getattr(output, "trace") is trace  # noqa: B009


def test_capture_off_holds_none_as_ever() -> None:
    output = run(capture="off")
    assert output.__dict__["trace"] is None and output.trace is None


_DUMPS: dict[str, Callable[[EnsembleOutput], Any]] = {
    "python": lambda o: o.model_dump(),
    "python, round trip": lambda o: o.model_dump(round_trip=True),
    "json mode": lambda o: o.model_dump(mode="json"),
    "json": lambda o: o.model_dump_json(),
    "json, indented": lambda o: o.model_dump_json(indent=2),
    "include inside the trace": lambda o: o.model_dump(include={"trace": {"run_id", "tasks"}}),
    "exclude inside the trace": lambda o: o.model_dump_json(exclude={"trace": {"tasks"}}),
    "exclude unset": lambda o: o.model_dump(exclude_unset=True),
    "exclude defaults": lambda o: o.model_dump(mode="json", exclude_defaults=True),
    "exclude none": lambda o: o.model_dump(exclude_none=True),
    "to_jsonable_python": lambda o: to_jsonable_python(o),
    "jsonable": lambda o: jsonable(o),
    "repr": lambda o: repr(o),
}


@pytest.mark.parametrize("name", list(_DUMPS))
def test_every_dump_gives_what_the_validated_trace_gives(name: str) -> None:
    output = run()
    dump = _DUMPS[name]
    before = dump(output)
    assert deferred(output)  # dumped from the placeholder
    output.trace  # noqa: B018 - now the validated trace itself
    assert not deferred(output)
    assert dump(output) == before


class Holder(BaseModel):
    output: EnsembleOutput
    anything: Any = None
    outputs: list[EnsembleOutput] = []


class Revalidating(BaseModel):
    model_config = ConfigDict(revalidate_instances="always")
    output: EnsembleOutput


def test_an_output_inside_another_model_dumps_and_revalidates_its_trace() -> None:
    lazy, made = run(), run()
    made.trace  # noqa: B018
    for output in (lazy, made):
        holder = Holder(output=output, anything=output, outputs=[output])
        data = json.loads(holder.model_dump_json())
        assert data["output"] == data["anything"] == data["outputs"][0]
        assert data["output"]["trace"]["run_id"] == output.run_id
        assert holder.model_dump()["anything"]["trace"]["tasks"][0]["index"] == 1
    assert deferred(lazy)
    again = Revalidating(output=lazy).output
    assert isinstance(again.trace, ExecutionTrace) and again.trace == lazy.trace


def test_equality_reads_the_trace_on_either_side() -> None:
    output = run()
    saved = json.loads(output.model_dump_json())["trace"]
    twin = output.model_copy(update={"trace": ExecutionTrace.model_validate(saved)})
    assert deferred(output) and not deferred(twin)
    assert output == twin and twin == output
    assert output == copy.copy(output)  # one placeholder shared
    other = run()
    assert other != output  # another run: another id, another trace
    assert other.model_copy(update={"run_id": output.run_id}) != output
    assert output.__dict__["trace"] == output.trace and output.__dict__["trace"] != other.trace


def test_pickles_and_deep_copies_hold_the_validated_trace() -> None:
    output = run().model_copy(update={"tool_metrics": {}})  # ToolMetrics hold a lock
    assert deferred(output)
    for copied in (
        pickle.loads(pickle.dumps(output)),
        copy.deepcopy(output),
        output.model_copy(deep=True),
    ):
        assert isinstance(copied.__dict__["trace"], ExecutionTrace)
        assert copied.trace == output.trace and copied.trace is not output.trace
        assert copied == output
    shallow = run()
    twin = shallow.model_copy(update={"raw": "edited"})
    assert twin.trace is shallow.trace  # a shallow copy shares the trace, as it always did


def test_iterating_the_output_gives_the_trace() -> None:
    output = run()
    assert isinstance(dict(output)["trace"], ExecutionTrace)
    assert dict(output)["trace"] is output.trace


def test_threads_reading_at_once_get_one_trace() -> None:
    output = run()
    seen: list[Any] = []
    start = threading.Barrier(8)

    def read() -> None:
        start.wait()
        seen.append(output.trace)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 8 and all(trace is seen[0] for trace in seen)


def test_a_trace_that_does_not_validate_reads_as_none(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentensemble.tracing import recorder

    monkeypatch.setattr(recorder, "now", lambda: "not a time")  # the run's end: invalid
    output = run()
    assert output.raw == "Sunny in Oslo"  # the run itself is fine
    assert output.trace is None
    assert output.model_dump()["trace"] is None


def test_the_field_is_still_a_field_and_subclasses_keep_their_own_default() -> None:
    assert "trace" in EnsembleOutput.model_fields
    with pytest.raises(AttributeError):
        EnsembleOutput.trace  # noqa: B018 - as pydantic answers for a field on the class

    class Mine(EnsembleOutput):
        trace: Any = "mine"

    assert Mine(raw="r", task_outputs=[]).trace == "mine"
    assert EnsembleOutput(raw="r", task_outputs=[]).trace is None
    with pytest.raises(Exception, match="frozen"):
        run().trace = None  # type: ignore[misc]


def test_the_trace_times_are_utc_datetimes_in_the_order_things_happened() -> None:
    from datetime import datetime, timezone

    before = datetime.now(timezone.utc)
    output = run()
    after = datetime.now(timezone.utc)
    trace = output.trace
    assert trace is not None
    task = trace.tasks[0]
    times = [
        trace.started_at,
        task.started_at,
        task.model_turns[0].started_at,
        task.tool_calls[0].started_at,
        task.model_turns[1].started_at,
        task.ended_at,
        trace.ended_at,
    ]
    assert all(type(t) is datetime and t.tzinfo is timezone.utc for t in times)
    assert [before, *times, after] == sorted([before, *times, after])


def test_a_lone_surrogate_in_a_traced_key_saves_alike_before_and_after_the_read() -> None:
    from agentensemble.testing import ScriptedChatModel as Model

    task = Task(description="Forecast {city}", expected_output="x", agent=Agent(role="r", goal="g"))
    output = Ensemble(tasks=[task], llm=Model(["ok"])).run({"city": "Oslo", "n\ud800": "v"})
    saved = output.model_dump_json()
    assert deferred(output)
    assert '"n\ufffd":"v"' in saved
    output.trace  # noqa: B018
    assert output.model_dump_json() == saved
