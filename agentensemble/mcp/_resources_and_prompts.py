"""An MCP server's resources and prompts: what ``list_resources``, ``read_resource``,
``list_prompts`` and ``get_prompt`` ask it, beside its tools.

Each request goes over the run's connection inside a run, the one ``async with server:`` holds,
or else a connection made for that one request and closed after it. What comes back is
untrusted data, shaped and bounded by ``_content.py``. Starting, naming and filtering the
server's tools stays in ``server.py``; ``_MCPServer`` there is a ``ResourcesAndPrompts``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, TypeVar

from typing_extensions import Self

from agentensemble.errors import ConfigurationError
from agentensemble.mcp._connection import Connection, MCPServerError
from agentensemble.mcp._content import (
    MAX_LISTED,
    MCPPrompt,
    MCPPromptResult,
    MCPResource,
    MCPResourceContent,
    ResourceTooLarge,
    contents_from,
    prompt_arguments,
    prompt_from,
    prompts_from,
    resources_from,
)
from agentensemble.tools.source import ToolSource, opened_source

T = TypeVar("T")


class ResourcesAndPrompts(ToolSource):
    """The requests beyond tools, on whatever connection the server has (see the module docs).

    A subclass sets ``max_output_chars``, ``max_resource_bytes`` and ``_held`` (None) and
    implements ``open`` (returning a ``Connection``) and ``describe``."""

    max_output_chars: int
    max_resource_bytes: int
    _held: Connection | None

    async def __aenter__(self) -> Self:
        """Hold one connection for the block: requests outside a run use it."""
        if self._held is not None:
            raise ConfigurationError(f"{self.describe()} is already entered with async with")
        connection = await self.open()
        assert isinstance(connection, Connection)
        self._held = connection
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        held, self._held = self._held, None
        if held is not None:
            await held.close()

    async def _ask(self, what: str, send: Callable[[Any], Awaitable[T]]) -> T:
        """``send(session)`` on the run's connection, the held one, or a fresh one."""
        found = opened_source(self) or self._held
        if isinstance(found, Connection):
            return await found.request(what, send)
        connection = await self.open()
        assert isinstance(connection, Connection)
        try:
            return await connection.request(what, send)
        finally:
            await connection.close()

    async def list_resources(self) -> list[MCPResource]:
        """The resources the server lists (following pagination; at most 1000)."""
        listed = await self._ask("list_resources", _paged("list_resources", "resources"))
        return resources_from(listed)

    async def read_resource(self, uri: str) -> list[MCPResourceContent]:
        """The resource's contents: text (redacted, cut at ``max_output_chars``) or bytes (at
        most ``max_resource_bytes``). Untrusted data: feed it to a task as knowledge or
        context, never as its instructions."""
        if not isinstance(uri, str) or not uri.strip():
            raise ConfigurationError(f"read_resource needs a resource URI, got {uri!r}")
        result = await self._ask(
            f"read_resource({uri!r})", lambda session: session.read_resource(uri)
        )
        try:
            return contents_from(
                result, self.max_output_chars, self.max_resource_bytes, self.describe()
            )
        except (ResourceTooLarge, ValueError) as error:
            raise MCPServerError(str(error)) from None

    async def list_prompts(self) -> list[MCPPrompt]:
        """The prompts the server lists, with their arguments (at most 1000)."""
        listed = await self._ask("list_prompts", _paged("list_prompts", "prompts"))
        return prompts_from(listed)

    async def get_prompt(self, name: str, args: Mapping[str, str] | None = None) -> MCPPromptResult:
        """The prompt filled with ``args`` (strings). ``.text`` is its text;
        ``.as_description()`` the same, safe as a ``Task(description=...)``."""
        if not isinstance(name, str) or not name.strip():
            raise ConfigurationError(f"get_prompt needs a prompt name, got {name!r}")
        try:
            arguments = prompt_arguments(name, args)
        except ValueError as error:
            raise ConfigurationError(str(error)) from None
        result = await self._ask(
            f"get_prompt({name!r})", lambda session: session.get_prompt(name, arguments)
        )
        return prompt_from(name, result, self.max_output_chars)


def _paged(method: str, field: str) -> Callable[[Any], Awaitable[list[Any]]]:
    """A request listing every item of ``method`` (at most ``MAX_LISTED``, 100 pages)."""

    async def send(session: Any) -> list[Any]:
        from mcp_types import PaginatedRequestParams

        items: list[Any] = []
        cursor: str | None = None
        for _ in range(100):
            params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
            page = await getattr(session, method)(params=params)
            items.extend(getattr(page, field, None) or [])
            cursor = page.next_cursor
            if not cursor or len(items) >= MAX_LISTED:
                break
        return items[:MAX_LISTED]

    return send


__all__ = ["ResourcesAndPrompts"]
