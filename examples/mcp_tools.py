"""An agent using an MCP server's tools next to a built-in one.

Run it with ``python examples/mcp_tools.py``. It starts the bundled MCP server
(examples/_tiny_mcp_server.py) as a subprocess for the run and stops it at the end. With no API
key it runs offline on a scripted model (and says so); with ``OPENAI_API_KEY`` set it uses
``openai/gpt-4o-mini``, and ``AGENTENSEMBLE_MODEL`` names any litellm model. See docs/tools.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _model_choice import choose_model

from agentensemble import Agent, ChatModel, Ensemble, Task
from agentensemble.mcp import MCPServerStdio
from agentensemble.testing import ScriptedChatModel, text, tool_call, tool_calls
from agentensemble.tools.builtin import Calculator

SERVER_SCRIPT = Path(__file__).with_name("_tiny_mcp_server.py")


def offline_model() -> ChatModel:
    """The scripted offline model: the turns a real model would take."""
    return ScriptedChatModel(
        [
            tool_calls(
                ("geo_capital_of", {"country": "France"}), ("geo_capital_of", {"country": "Japan"})
            ),
            tool_call("geo_distance_km", {"from_city": "Paris", "to_city": "Tokyo"}),
            tool_call("calculator", {"expression": "9712 / 1.609344"}),
            text("Paris to Tokyo is 9712 km (about 6035 miles)."),
        ]
    )


def build(model: str | ChatModel) -> Ensemble:
    geo = MCPServerStdio(sys.executable, [str(SERVER_SCRIPT)], prefix="geo")
    traveller = Agent(
        role="Travel assistant",
        goal="Answer travel questions with the tools, never from memory",
        tools=[geo, Calculator()],
    )
    task = Task(
        description="How far is it from the capital of {a} to the capital of {b}, in km and miles?",
        expected_output="One sentence",
        agent=traveller,
    )
    return Ensemble(tasks=[task], llm=model)


def main() -> int:
    model, banner = choose_model(offline_model())
    print(banner)
    output = build(model).run(inputs={"a": "France", "b": "Japan"}).task_outputs[0]
    for call in output.tool_calls:
        print(f"Tool call: {call.name}({call.arguments}) -> {call.output}")
    print(f"\n{output.raw}")
    print("The MCP server was started for the run and has been stopped.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
