"""The mcp extra stays optional: importing the package, its MCP module and the built-in tools
loads neither ``mcp`` nor ``jsonschema``; only a run that starts a server does."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_mcp_module_and_built_ins_loads_no_extra() -> None:
    code = (
        "import sys, agentensemble, agentensemble.mcp, agentensemble.tools.builtin\n"
        "from agentensemble.mcp import MCPServerStdio\n"
        "from agentensemble import Agent\n"
        "Agent(role='a', goal='b', tools=[MCPServerStdio('srv')])\n"
        "print(sorted(m for m in ('mcp', 'jsonschema', 'litellm', 'httpx2') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
