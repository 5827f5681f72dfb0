"""Tool sources: opened once per run, shared by nested runs, always closed, resolved like any
tool while open and empty before."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from agentensemble import Agent, Ensemble, Task
from agentensemble.errors import ConfigurationError
from agentensemble.testing import ScriptedChatModel, tool_call
from agentensemble.tools import AbstractAgentTool, AgentTool, ToolResolver
from agentensemble.tools.source import (
    OpenedSource,
    ToolSource,
    open_tool_sources,
    tool_sources_in,
)

pytestmark = pytest.mark.anyio


class Echo(AbstractAgentTool):
    def __init__(self, name: str) -> None:
        self.name = name
        self.description = f"Echo as {name}"

    def do_execute(self, input: str) -> str:
        return f"{self.name}: {input}"


class Opened(OpenedSource):
    def __init__(self, source: FakeSource) -> None:
        self._source = source

    @property
    def tools(self) -> Sequence[AgentTool]:
        return [Echo(name) for name in self._source.names]

    async def close(self) -> None:
        self._source.log.append(f"close {self._source.label}")
        if self._source.close_error is not None:
            raise self._source.close_error


class FakeSource(ToolSource):
    def __init__(self, label: str, names: list[str], log: list[str], fail: bool = False) -> None:
        self.label, self.names, self.log, self.fail = label, names, log, fail
        self.close_error: BaseException | None = None

    def describe(self) -> str:
        return f"fake source {self.label!r}"

    async def open(self) -> OpenedSource:
        if self.fail:
            raise ConfigurationError(f"{self.describe()} could not start")
        self.log.append(f"open {self.label}")
        return Opened(self)


def test_outside_a_run_a_source_offers_no_tools() -> None:
    source = FakeSource("a", ["echo"], [])
    assert source.tools() == ()
    assert len(ToolResolver().resolve([source])) == 0


async def test_while_open_its_tools_resolve_like_any_tool_and_are_gone_after() -> None:
    log: list[str] = []
    source = FakeSource("a", ["one", "two"], log)
    async with open_tool_sources([source]):
        resolved = ToolResolver().resolve([source, source])  # listed twice: counted once
        assert resolved.names == ["one", "two"]
        result = await resolved.tools[0].run('{"input": "hi"}')
        assert result.output == "one: hi"
    assert source.tools() == ()
    assert log == ["open a", "close a"]


async def test_a_nested_block_shares_what_the_outer_one_opened() -> None:
    log: list[str] = []
    source = FakeSource("a", ["one"], log)
    async with open_tool_sources([source]), open_tool_sources([source]):
        assert [t.name for t in source.tools()] == ["one"]
    assert log == ["open a", "close a"]


async def test_a_source_that_fails_to_open_closes_those_already_open() -> None:
    log: list[str] = []
    good, bad = FakeSource("good", ["one"], log), FakeSource("bad", [], log, fail=True)
    with pytest.raises(ConfigurationError, match="fake source 'bad' could not start"):
        async with open_tool_sources([good, bad]):
            raise AssertionError("never entered")
    assert log == ["open good", "close good"]


async def test_sources_are_closed_when_the_block_fails() -> None:
    log: list[str] = []
    with pytest.raises(RuntimeError):
        async with open_tool_sources([FakeSource("a", [], log)]):
            raise RuntimeError("the run failed")
    assert log == ["open a", "close a"]


async def test_every_source_is_closed_even_when_one_close_is_interrupted() -> None:
    log: list[str] = []
    first, second = FakeSource("first", [], log), FakeSource("second", [], log)
    second.close_error = asyncio.CancelledError()
    with pytest.raises(asyncio.CancelledError):
        async with open_tool_sources([first, second]):
            pass
    assert log == ["open first", "open second", "close second", "close first"]


def test_sources_are_found_once_across_tool_lists() -> None:
    a, b = FakeSource("a", [], []), FakeSource("b", [], [])
    assert tool_sources_in([[a, Echo("x")], [b, a], []]) == [a, b]


async def test_a_duplicate_with_a_source_tool_names_both_origins() -> None:
    source = FakeSource("a", ["echo"], [])
    async with open_tool_sources([source]):
        with pytest.raises(ConfigurationError) as caught:
            ToolResolver().resolve([Echo("echo"), source])
    assert str(caught.value) == (
        "Duplicate tool name: 'echo' (from Echo tool and from fake source 'a')"
    )


async def test_an_ensemble_opens_its_sources_for_the_run_and_closes_them() -> None:
    log: list[str] = []
    source = FakeSource("a", ["echo"], log)
    model = ScriptedChatModel([tool_call("echo", {"input": "hello"}), "done"])
    agent = Agent(role="Echoer", goal="Echo", tools=[source], llm=model)
    output = await Ensemble(tasks=[Task(description="Echo hello", agent=agent)]).arun()

    assert model.requests[1].tool_results == ["echo: hello"]
    assert output.raw == "done"
    assert log == ["open a", "close a"]
