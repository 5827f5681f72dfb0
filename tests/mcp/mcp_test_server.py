"""A real MCP server for the tests, built with the ``mcp`` package's server class.

Run ``python mcp_test_server.py`` for stdio (``noisy MB [crash]`` first writes MB megabytes to
stderr, then serves or exits), ``python mcp_test_server.py http PORT`` for
streamable HTTP or ``python mcp_test_server.py sse PORT`` for SSE, all on 127.0.0.1.
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

server = MCPServer("agentensemble-test")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@server.tool()
def fail(message: str) -> str:
    """Always fails with the given message."""
    raise ToolError(message)


@server.tool(name="shout-text")
def shout_text(text: str) -> str:
    """Upper-case the text (a name with a dash, as many servers use)."""
    return text.upper()


@server.tool()
def big(size: int) -> str:
    """Return ``size`` characters."""
    return "x" * size


class Word(BaseModel):
    word: str = Field(pattern="^(a|a)+$")  # backtracks for hours on "aaa...a!"


@server.tool()
def hostile_word() -> Word:
    """Structured content that breaks its own schema's catastrophic pattern."""
    return Word.model_construct(word="a" * 40 + "!")


@server.tool()
def die() -> str:
    """Exit the server process at once, mid-call."""
    sys.stderr.write("test server: dying on request\n")
    for name in ("MODE_SETTING", "DATABASE_URI"):  # a server printing its configuration
        if name in os.environ:
            sys.stderr.write(f"config {name}={os.environ[name]}\n")
    sys.stderr.flush()
    os._exit(3)


def main() -> None:
    pid_file = os.environ.get("MCP_TEST_PID_FILE")
    if pid_file:
        with open(pid_file, "w") as handle:
            handle.write(str(os.getpid()))
    child_pid_file = os.environ.get("MCP_TEST_CHILD_PID_FILE")
    if child_pid_file:  # a worker child in the server's process group, outliving a polite exit
        import subprocess

        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        with open(child_pid_file, "w") as handle:
            handle.write(str(child.pid))
    if len(sys.argv) > 1 and sys.argv[1] == "hang":
        time.sleep(120)  # never answers the handshake
    if len(sys.argv) > 2 and sys.argv[1] == "noisy":  # megabytes of stderr, then serves
        sys.stderr.write("test server: noisy start\n")
        line = "noise " * 15 + "\n"
        for _ in range(int(sys.argv[2]) * 1_000_000 // len(line)):
            sys.stderr.write(line)
        sys.stderr.write("test server: the noise is over\n")
        sys.stderr.flush()
        if len(sys.argv) > 3 and sys.argv[3] == "crash":
            sys.exit(2)
    if len(sys.argv) > 1 and sys.argv[1] == "crash":
        sys.stderr.write("test server: refusing to start\n")
        sys.stderr.write(f"token in use: {os.environ.get('MCP_TEST_SECRET', 'none')}\n")
        sys.exit(2)
    if len(sys.argv) > 2 and sys.argv[1] in ("http", "sse"):
        transport = "streamable-http" if sys.argv[1] == "http" else "sse"
        server.run(transport, host="127.0.0.1", port=int(sys.argv[2]))  # type: ignore[call-overload]
    else:
        server.run()


if __name__ == "__main__":
    main()
