"""Tool sources: objects in ``tools=[...]`` whose tools exist only while something runs.

An MCP server lists its tools only once it is started. A ``ToolSource`` is opened once per
run (``open_tool_sources``, entered by ``Ensemble.arun`` before the first model call), shared by
every task that lists it, and closed when the run ends — on success, failure or cancellation.
While it is open, ``tools()`` returns its AgentTools and the resolver turns them into
executables like any other tool; outside a run it returns nothing, so an Agent or Task that
lists a source is validated at construction without starting anything.
"""

from __future__ import annotations

import contextvars
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from types import MappingProxyType

from agentensemble.logging import get_logger
from agentensemble.tools.base import AgentTool

_log = get_logger()


class OpenedSource(ABC):
    """A started source: the tools it offers now, and how to stop it."""

    @property
    @abstractmethod
    def tools(self) -> Sequence[AgentTool]:
        """The tools, listed once when the source was opened."""

    @abstractmethod
    async def close(self) -> None:
        """Stop or disconnect; must not raise and must end within a bounded time."""


class ToolSource(ABC):
    """A provider of tools known only at run time (see the module docs).

    Subclasses implement ``describe`` (used in error messages, e.g. ``MCP server 'npx srv'``)
    and ``open`` (start and list; raise ConfigurationError naming what failed).
    """

    @abstractmethod
    def describe(self) -> str:
        """What this source is, for messages: ``MCP server 'python server.py'``."""

    @abstractmethod
    async def open(self) -> OpenedSource:
        """Start or connect, and list the tools. Called once per run."""

    @property
    def asks_for_approval(self) -> bool:
        """Whether some of its tools will need a reviewer (known before the source is opened,
        so a missing review handler is reported when the Ensemble is built)."""
        return False

    def tools(self) -> Sequence[AgentTool]:
        """The tools of the run in progress; empty when no run has opened this source."""
        opened = _opened.get().get(id(self))
        return () if opened is None else opened.tools


_opened: contextvars.ContextVar[Mapping[int, OpenedSource]] = contextvars.ContextVar(
    "agentensemble_opened_tool_sources", default=MappingProxyType({})
)


def opened_source(source: ToolSource) -> OpenedSource | None:
    """What the run in progress opened for ``source`` (None outside a run that lists it)."""
    return _opened.get().get(id(source))


def tool_sources_in(tool_lists: Iterable[Iterable[object]]) -> list[ToolSource]:
    """The distinct ToolSources among several ``tools`` lists, in first-seen order."""
    found: dict[int, ToolSource] = {}
    for tools in tool_lists:
        for item in tools:
            if isinstance(item, ToolSource):
                found.setdefault(id(item), item)
    return list(found.values())


@asynccontextmanager
async def open_tool_sources(sources: Sequence[ToolSource]) -> AsyncIterator[None]:
    """Open every source not already open in this context, and close them on the way out.

    A source that fails to open fails the whole block (those already opened are closed first).
    A nested run (an ensemble called from a tool) shares the sources its outer run opened.
    """
    current = _opened.get()
    pending = [source for source in sources if id(source) not in current]
    if not pending:
        yield
        return
    opened: dict[int, OpenedSource] = dict(current)
    started: list[OpenedSource] = []
    try:
        for source in pending:
            handle = await source.open()
            started.append(handle)
            opened[id(source)] = handle
            _log.info("tool source opened", source=source.describe(), tools=len(handle.tools))
        token = _opened.set(opened)
        try:
            yield
        finally:
            _opened.reset(token)
    finally:
        await _close_all(started)


async def _close_all(handles: Sequence[OpenedSource]) -> None:
    """Close every handle, last opened first, even when one close is interrupted."""
    interrupted: BaseException | None = None
    for handle in reversed(handles):
        try:
            await handle.close()
        except BaseException as error:  # a cancelled run: close the others, then go on
            interrupted = interrupted or error
    if interrupted is not None:
        raise interrupted


__all__ = ["OpenedSource", "ToolSource", "open_tool_sources", "opened_source", "tool_sources_in"]
