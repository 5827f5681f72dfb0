"""Tool approvals and questions to the human reach listeners as review events, like task reviews."""

from agentensemble import Agent, Ensemble, ReviewDecided, ReviewRequested, Task, tool
from agentensemble.testing import ScriptedChatModel, tool_call, tool_calls
from agentensemble_review import Continue, Edit, ExitEarly, HumanInputTool, ScriptedReviewHandler


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


class Collect:
    def __init__(self) -> None:
        self.events: list[object] = []

    def on_event(self, event: object) -> None:
        if isinstance(event, (ReviewRequested, ReviewDecided)):
            self.events.append(event)


def test_approvals_and_questions_are_emitted() -> None:
    listener = Collect()
    model = ScriptedChatModel(
        [
            tool_calls(("delete", {"path": "/a"}), ("delete", {"path": "/b"})),
            tool_call("ask_human", {"input": "Which colour?"}),
            "done",
        ]
    )
    agent = Agent(role="Janitor", goal="g", tools=[delete, HumanInputTool()], llm=model)
    reviewer = ScriptedReviewHandler([Continue(), ExitEarly("no"), Edit("blue")])
    Ensemble(
        tasks=[Task(description="Clean up", agent=agent)],
        review_handler=reviewer,
        listeners=[listener],
    ).run()

    requested = [e for e in listener.events if isinstance(e, ReviewRequested)]
    decided = [e for e in listener.events if isinstance(e, ReviewDecided)]
    assert [e.tool_name for e in requested] == ["delete", "delete", "ask_human"]
    assert all(e.timing == "during_execution" for e in requested)
    assert sorted(e.decision for e in decided[:2]) == ["continue", "exit_early"]
    assert decided[2].decision == "edit"
    assert decided[2].details["revised_output"] == "blue"
    assert all(e.task_description == "Clean up" for e in decided)
