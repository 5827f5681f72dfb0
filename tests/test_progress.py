"""verbose=True prints one line per task, tool call and review decision."""

import io

import pytest

from agentensemble import Agent, ConsoleProgressListener, Ensemble, Task, tool
from agentensemble.logging import register_secret
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


@tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@pytest.mark.parametrize("encoding", ["utf-8", "ascii", "latin-1"])
def test_progress_escapes_model_and_tool_text_in_any_stream_encoding(encoding: str) -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding=encoding, errors="strict", write_through=True)
    hostile = "\x1b[2J\rok \u202eevil\u202c \ud800 zero\u200bwidth caf\u00e9"
    model = ScriptedChatModel([tool_call("echo", {"text": hostile}), hostile])
    agent = Agent(role="Caller", goal="g", tools=[echo], llm=model)
    output = Ensemble(
        tasks=[Task(description="Echo \x1b[31mred", agent=agent)],
        listeners=[ConsoleProgressListener(stream)],
    ).run()
    assert output.exit_reason.value == "completed"  # printing never failed the run
    text = raw.getvalue().decode(encoding)
    for invisible in ("\x1b", "\r", "\u202e", "\u200b"):
        assert invisible not in text
    assert "[1/1] Caller: Echo \\x1b[31mred" in text
    # whitespace (the carriage return too) is collapsed to one space on a progress line
    assert "-> \\x1b[2J ok \\u202eevil\\u202c \\ud800 zero\\u200bwidth" in text


def test_progress_redacts_registered_secrets() -> None:
    secret = "hook-token-5f2d9c81"
    register_secret(secret)
    stream = io.StringIO()
    model = ScriptedChatModel([tool_call("echo", {"text": f"token={secret}"}), "done"])
    agent = Agent(role="Caller", goal="g", tools=[echo], llm=model)
    Ensemble(
        tasks=[Task(description="Echo", agent=agent)],
        listeners=[ConsoleProgressListener(stream)],
    ).run()
    assert secret not in stream.getvalue()
    assert "token=***" in stream.getvalue()


def test_loop_iterations_and_graph_steps_are_shown() -> None:
    import io

    from agentensemble import ConsoleProgressListener, Edge, Ensemble, Graph, Loop, Task

    stream = io.StringIO()
    loop = Loop(
        name="polish",
        body=[Task(name="a", description="a", handler=lambda c: "A")],
        max_iterations=2,
    )
    graph = Graph(
        name="desk",
        start="s",
        states={"s": Task(description="s", handler=lambda c: "S")},
        edges=[Edge("s", Graph.END)],
    )
    Ensemble(tasks=[loop, graph], listeners=[ConsoleProgressListener(stream)]).run()
    text = stream.getvalue()
    assert "loop polish: iteration 1 done\n" in text
    assert "loop polish: iteration 2 done, stopped by max_iterations" in text
    assert "graph desk: step 1 s -> __end__" in text
