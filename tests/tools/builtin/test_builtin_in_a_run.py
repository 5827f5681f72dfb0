"""Built-in tools inside a whole run: refusals reach the model as errors, approvals gate writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentensemble import Agent, Ensemble, Task
from agentensemble.testing import ScriptedChatModel, tool_call, tool_calls
from agentensemble.tools.builtin import Calculator, FileRead, FileWrite, ListDirectory
from agentensemble_review import Continue, ExitEarly, ScriptedReviewHandler

pytestmark = pytest.mark.anyio


async def test_a_refusal_is_an_error_the_model_reads_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk")
    model = ScriptedChatModel(
        [
            tool_calls(
                ("file_read", {"path": "../../etc/passwd"}),
                ("calculator", {"expression": "__import__('os')"}),
            ),
            tool_call("file_read", {"path": "notes.txt"}),
            "The note says: remember the milk",
        ]
    )
    agent = Agent(role="Clerk", goal="Read", tools=[FileRead(tmp_path), Calculator()], llm=model)
    output = await Ensemble(tasks=[Task(description="Read the note", agent=agent)]).arun()

    traversal, code = model.requests[1].tool_results
    assert traversal.startswith("Error: path '../../etc/passwd' contains '..'")
    assert code.startswith("Error: unknown function '__import__'")
    assert model.requests[2].tool_results == ["remember the milk"]
    assert [call.is_success for call in output.task_outputs[0].tool_calls] == [False, False, True]


async def test_file_write_runs_only_after_the_reviewer_approves(tmp_path: Path) -> None:
    handler = ScriptedReviewHandler([ExitEarly("not there"), Continue()])
    model = ScriptedChatModel(
        [
            tool_call("file_write", {"path": "a.txt", "content": "first"}),
            tool_call("file_write", {"path": "b.txt", "content": "second"}),
            tool_call("list_directory", {}),
            "done",
        ]
    )
    tools = [FileWrite(tmp_path), ListDirectory(tmp_path)]
    agent = Agent(role="Writer", goal="Write", tools=tools, llm=model)
    task = Task(description="Write files", agent=agent)
    await Ensemble(tasks=[task], review_handler=handler).arun()

    assert model.requests[1].tool_results == ["Error: Rejected by reviewer: not there"]
    assert model.requests[2].tool_results == ["Wrote 6 bytes to b.txt"]
    assert model.requests[3].tool_results == ["b.txt (6 bytes)"]
    assert not (tmp_path / "a.txt").exists()
    # the reviewer sees the validated arguments the tool would run with, defaults included
    assert handler.requests[0].output == '{"path": "a.txt", "content": "first", "append": false}'
