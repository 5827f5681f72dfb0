"""Outputs of many shapes for tests/_base/test_saveable.py: lone surrogates, hidden characters, a
key-shaped secret, objects pydantic does not know (one whose ``__str__`` fails, one whose
``__str__`` saves a model of its own), nested models at every depth."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from agentensemble import EnsembleOutput, GraphResult, LoopResult, TaskOutput
from agentensemble.outputs import ToolCallRecord
from agentensemble.tracing.trace import ExecutionTrace, ModelTurn, TaskTrace, ToolCallTrace

SECRET = "sk-proj-Abcdefghijklmnop0123456789QRSTuvwx"  # a key's shape; saving does not redact
HIDDEN = "zero\u200bwidth, bidi\u202eflip, nul\x00, line\u2028sep, bom\ufeff"
AT = datetime(2026, 11, 27, 19, 0, tzinfo=timezone.utc)


class Custom:
    def __repr__(self) -> str:
        return "<Custom>"

    def __str__(self) -> str:
        return "custom \ud800 object"


class Hostile:
    def __repr__(self) -> str:
        return "<Hostile>"

    def __str__(self) -> str:
        raise RuntimeError("no text for you")


class SavesItsOwn:
    def __repr__(self) -> str:
        return "<SavesItsOwn>"

    """A __str__ that saves a model of its own (with a lone surrogate) on the way."""

    def __str__(self) -> str:
        return TaskOutput(
            raw="inner \udce9", task_description="d", agent_role="r"
        ).model_dump_json()


def _record(n: int, structured: Any) -> ToolCallRecord:
    return ToolCallRecord(
        name=f"tool{n}",
        arguments='{"q": "caf\udce9 ' + SECRET + '"}',
        output=f"found \ud83d\ude00 {HIDDEN}",
        is_success=n % 2 == 0,
        duration=timedelta(milliseconds=n),
        structured_output=structured,
    )


def shapes() -> dict[str, Any]:
    plain = TaskOutput(raw="plain text", task_description="Describe", agent_role="Writer")
    odd = TaskOutput(
        raw=f"done \ud800 with {SECRET} and {HIDDEN}",
        parsed={"k": ["v\ud800", {"deep": [1, 2.5, None, True]}], "ok": "caf\u00e9"},
        task_description="Read caf\udce9.txt",
        agent_role="Reader \ud800",
        duration=timedelta(seconds=1.5),
        tool_calls=[
            _record(0, {"name\udce9": ["caf\udce9.txt"], "n": 3}),
            _record(1, Custom()),
            _record(2, {"set": {1}, "obj": Custom(), "bytes": b"\xff\xfe"}),
            _record(3, Hostile()),
            _record(4, SavesItsOwn()),
            _record(5, "plain"),
        ],
        llm_calls=3,
        task_name="read\ud800",
    )
    unknown = TaskOutput(  # pydantic cannot save ``parsed``: the model's fallback path
        raw="ok \ud800",
        parsed={"obj": Custom(), "k": "\ud800"},
        task_description="x",
        agent_role="y",
    )
    turns = [
        ModelTurn(
            call_id=f"c{n}",
            model="scripted",
            agent_role="Reader",
            started_at=AT,
            messages=[{"role": "user", "content": f"turn {n} \ud800 {SECRET}"}],
            content=f"answer {n} {HIDDEN}",
        )
        for n in range(3)
    ]
    trace = ExecutionTrace(
        run_id="r1",
        started_at=AT,
        workflow="sequential",
        inputs={"who": "caf\udce9", "n": 1},
        tasks=[
            TaskTrace(
                index=1,
                description="Read \ud800",
                agent_role="Reader",
                started_at=AT,
                model_turns=turns,
                tool_calls=[ToolCallTrace(name="t", arguments="{}", output="o\udce9")],
                output="done \ud800",
            )
        ],
    )
    run = EnsembleOutput(
        raw="final \ud800",
        task_outputs=[plain, odd, unknown],
        tool_metrics={"tool\ud800": {"calls": 2}, "odd": Custom()},
        trace=trace,
        loops={"l\ud800": LoopResult(iterations=1, stopped_by="until", history=[{"w": odd}])},
        graphs={"g": GraphResult(path=["a\ud800"], stopped_by="end", outputs={"a": unknown})},
    )
    clean_run = EnsembleOutput(  # every level saved as a structure: no fallback to text
        raw="final \ud800",
        task_outputs=[plain, odd, unknown],
        tool_metrics={"tool": {"calls": 2, "note": "caf\udce9"}},
        trace=trace,
        loops={"l": LoopResult(iterations=1, stopped_by="until", history=[{"w": odd}])},
        graphs={"g": GraphResult(path=["a\ud800"], stopped_by="end", outputs={"a": unknown})},
    )
    keyed = TaskOutput(  # lone surrogates in dict keys: ``parsed``, a tool's result
        raw="keys",
        parsed={"k\ud800": {"d\udce9": ["v\ud800"]}, "ok": 1},
        task_description="Read keys",
        agent_role="Reader",
        tool_calls=[_record(6, {"name\udce9": {"n\ud800": 1}})],
    )
    typed_keys = EnsembleOutput(  # keys of typed dicts only (pydantic encodes those itself)
        raw="done",
        task_outputs=[plain],
        tool_metrics={"tool\ud800": {"calls": 1}},
        loops={"l\ud800": LoopResult(iterations=1, stopped_by="until", history=[{"w": plain}])},
        graphs={"g\udce9": GraphResult(path=["a"], stopped_by="end", outputs={"a\ud800": plain})},
    )
    keys = typed_keys.model_copy(
        update={
            "task_outputs": [plain, keyed],
            "trace": ExecutionTrace(
                run_id="r2", started_at=AT, workflow="sequential", inputs={"who\ud800": "x"}
            ),
        }
    )
    return {
        "clean_run": clean_run,
        "plain": plain,
        "odd": odd,
        "unknown": unknown,
        "record": odd.tool_calls[2],
        "trace": trace,
        "run": run,
        "run_without_trace": run.model_copy(update={"trace": None}),
        "keyed": keyed,
        "typed_keys": typed_keys,
        "keys": keys,
    }
