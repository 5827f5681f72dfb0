"""verbose=True prints one line per task, tool call and review decision."""

import io

from agentensemble import Agent, ConsoleProgressListener, Ensemble, Task, tool
from agentensemble.testing import ScriptedChatModel, tool_call


@tool
def shout(text: str) -> str:
    """Upper-case."""
    return text.upper()


def test_progress_lines() -> None:
    stream = io.StringIO()
    model = ScriptedChatModel([tool_call("shout", {"text": "hi"}), "HI"])
    agent = Agent(role="Caller", goal="g", tools=[shout], llm=model)
    Ensemble(
        tasks=[Task(description="Shout hi", agent=agent)],
        listeners=[ConsoleProgressListener(stream)],
    ).run()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[1/1] Caller: Shout hi"
    assert lines[1] == '    tool shout({"text": "hi"}) ok -> HI'
    assert lines[2].startswith("[1/1] done in ")
    assert lines[2].endswith("(2 model calls, 1 tool call)")
    assert lines[3] == "finished: completed"
