"""The core runs whole ensembles, tools included, where agentensemble_review cannot be imported."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import importlib.abc, sys

    class BlockReview(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "agentensemble_review":
                raise ImportError("agentensemble_review is blocked in this process")
            return None

    sys.meta_path.insert(0, BlockReview())

    from agentensemble import AbstractAgentTool, Agent, Ensemble, Task, tool
    from agentensemble.testing import ScriptedChatModel, tool_calls

    @tool
    def add(a: int, b: int) -> int:
        "Add."
        return a + b

    class Careful(AbstractAgentTool):
        name = "careful"
        description = "Asks for approval itself; with no handler that auto-approves."

        def do_execute(self, input):
            decision = self.request_approval(f"about to use {input}")
            return f"approved={decision!r}"

    model = ScriptedChatModel(
        [tool_calls(("add", {"a": 2, "b": 3}), ("careful", {"input": "x"})), "five"]
    )
    agent = Agent(role="Worker", goal="Add", tools=[add, Careful()], llm=model)
    result = Ensemble(tasks=[Task(description="Add 2 and 3", agent=agent)]).run()
    print([r.output for r in result.task_outputs[0].tool_calls], result.raw)
    assert "agentensemble_review" not in sys.modules
    try:
        import agentensemble_review  # noqa: F401
    except ImportError:
        print("review import blocked")
    """
)


def test_core_runs_with_tools_when_the_review_package_cannot_be_imported() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "['5', 'approved=Continue()'] five",
        "review import blocked",
    ]
