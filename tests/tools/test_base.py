"""ToolResult and the AgentTool interface: a tool implements execute or aexecute, never both."""

from __future__ import annotations

import asyncio
import threading

import pytest

from agentensemble.tools import AgentTool, ReturnBehavior, ToolResult
from agentensemble.tools.base import as_tool_result, render_value


class Shout(AgentTool):
    """Upper-cases its input (sync)."""

    name = "shout"
    description = "Upper-case the input"

    def execute(self, input: str) -> ToolResult:
        return ToolResult.success(input.upper())


class Whisper(AgentTool):
    """Lower-cases its input (async)."""

    name = "whisper"
    description = "Lower-case the input"
    return_behavior = ReturnBehavior.IMMEDIATE

    async def aexecute(self, input: str) -> ToolResult:
        await asyncio.sleep(0)
        return ToolResult.success(input.lower())


class Nothing(AgentTool):
    name = "nothing"
    description = "Implements neither method"


def test_success_and_failure_results() -> None:
    ok = ToolResult.success("42", structured_output={"answer": 42})
    assert (ok.output, ok.is_success, ok.error_message) == ("42", True, None)
    assert ok.structured_output == {"answer": 42}
    assert ToolResult.success().output == ""
    assert ToolResult.success(None).output == ""

    failed = ToolResult.failure("no such city")
    assert (failed.output, failed.is_success, failed.error_message) == ("", False, "no such city")
    assert failed.structured_output is None


def test_results_are_immutable_values() -> None:
    assert ToolResult.success("a") == ToolResult.success("a")
    with pytest.raises(AttributeError):
        ToolResult.success("a").output = "b"  # type: ignore[misc]


def test_sync_tool_runs_from_both_sides() -> None:
    assert Shout().execute("hi").output == "HI"
    assert asyncio.run(Shout().aexecute("hi")).output == "HI"


def test_async_aexecute_runs_sync_execute_in_a_worker_thread() -> None:
    seen: list[str] = []

    class WhereAmI(AgentTool):
        name = "where"
        description = "Reports its thread"

        def execute(self, input: str) -> ToolResult:
            seen.append(threading.current_thread().name)
            return ToolResult.success()

    asyncio.run(WhereAmI().aexecute(""))
    assert seen and seen[0] != threading.main_thread().name


def test_async_tool_runs_from_both_sides() -> None:
    assert asyncio.run(Whisper().aexecute("HI")).output == "hi"
    assert Whisper().execute("HI").output == "hi"  # sync caller, no loop


@pytest.mark.anyio
async def test_async_tool_called_synchronously_inside_a_running_loop() -> None:
    # Blocking, but never a deadlock: the coroutine runs on a helper thread's loop.
    assert Whisper().execute("HI").output == "hi"


def test_a_tool_must_implement_one_of_the_two() -> None:
    with pytest.raises(NotImplementedError, match="execute"):
        Nothing().execute("x")


def test_defaults_and_repr() -> None:
    assert Shout().return_behavior is ReturnBehavior.TO_LLM
    assert Whisper().return_behavior is ReturnBehavior.IMMEDIATE
    assert Shout().parameters_schema() is None  # the single `input` parameter
    assert repr(Shout()) == "Shout(name='shout')"


def test_name_and_description_may_be_set_in_init() -> None:
    class Greeter(AgentTool):
        def __init__(self, language: str) -> None:
            self.name = f"greet_{language}"
            self.description = f"Greets in {language}"

        def execute(self, input: str) -> ToolResult:
            return ToolResult.success(f"hello {input}")

    greeter = Greeter("en")
    assert (greeter.name, greeter.description) == ("greet_en", "Greets in en")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("text", ToolResult.success("text")),
        (None, ToolResult.success("")),
        (ToolResult.failure("x"), ToolResult.failure("x")),
        ({"a": 1}, ToolResult.success('{"a": 1}', structured_output={"a": 1})),
        ([1, 2], ToolResult.success("[1, 2]", structured_output=[1, 2])),
        (3.5, ToolResult.success("3.5", structured_output=3.5)),
    ],
)
def test_return_values_become_results(value: object, expected: ToolResult) -> None:
    assert as_tool_result(value) == expected


def test_render_value_handles_models_dates_and_strangers() -> None:
    import datetime

    from pydantic import BaseModel

    class City(BaseModel):
        name: str

    assert render_value(City(name="Oslo")) == '{"name":"Oslo"}'
    assert render_value({"when": datetime.date(2024, 5, 1)}) == '{"when": "2024-05-01"}'
    assert render_value({"x": object()}).startswith('{"x": "<object object')
    assert render_value("é") == "é"


@pytest.mark.anyio
async def test_async_tool_called_from_a_worker_thread_runs_on_the_agents_loop() -> None:
    from agentensemble.tools import ToolContext, use_tool_context

    loop_thread = threading.current_thread()
    seen: list[threading.Thread] = []

    class OnLoop(AgentTool):
        name = "on_loop"
        description = "Records where its coroutine runs"

        async def aexecute(self, input: str) -> ToolResult:
            seen.append(threading.current_thread())
            return ToolResult.success()

    with use_tool_context(ToolContext()):  # captures the running loop
        await asyncio.to_thread(OnLoop().execute, "x")  # e.g. a step of a sync pipeline
    assert seen == [loop_thread]
