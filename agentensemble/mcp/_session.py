"""The MCP SDK's ``ClientSession`` with our check of tool results (``_schema_check``).

The SDK's ``call_tool`` checks a result's structured content against the server's output schema
by calling ``self.validate_tool_result`` (a public method of ``ClientSession``): with ``re`` on
the event loop, a pattern and a value both chosen by the server. ``CheckedSession`` overrides
that method with ``bounded_result_check``'s, made from the tools the session listed.
``tests/mcp/test_mcp_servers.py`` checks that the SDK still calls it, so an upgrade that stops
doing so fails there rather than silently running the SDK's check again.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from mcp.client.session import ClientSession

from agentensemble.mcp._schema_check import bounded_result_check


class CheckedSession(ClientSession):
    """A ``ClientSession`` whose tool results are checked with bounded regexes, off the SDK."""

    _result_check: Callable[[str, Any], Coroutine[Any, Any, None]] | None = None

    def check_results_of(self, tools: list[Any]) -> None:
        """Check the results of ``tools`` (as listed by the server) against their schemas."""
        self._result_check = bounded_result_check(tools)

    async def validate_tool_result(self, name: str, result: Any) -> None:
        """Ours instead of the SDK's; nothing is checked before the tools are listed."""
        if self._result_check is not None:
            await self._result_check(name, result)


__all__ = ["CheckedSession"]
