"""A task's recorded prompt holding every earlier output: redacted section by section (each
earlier output scanned once per policy, not once per later task), and never leaking a secret
the policy learnt after an earlier prompt holding the same output was recorded."""

from __future__ import annotations

from typing import Any

from agentensemble import Agent, Ensemble, Task
from agentensemble.events import TaskCompleted
from agentensemble.logging import register_secret
from agentensemble.testing import ScriptedChatModel

LATE = "late-secret-of-the-chain-2727"


def test_a_secret_registered_between_two_tasks_is_redacted_from_later_prompts() -> None:
    """Task 1's output holds a value that becomes a registered secret only after task 3 ran:
    task 3's recorded prompt was redacted (and its sections remembered clean) before the policy
    knew it, as any record is; tasks 4 and 5, whose prompts hold the same output, must hide it."""
    long_output = "many plain words " * 200  # the prompts are long enough to be cut
    model = ScriptedChatModel(
        [f"first {long_output} {LATE}", f"second {long_output}", f"third {long_output}", "4", "5"]
    )
    agent = Agent(role="Writer", goal="write")
    tasks: list[Task] = []
    for n in range(5):
        tasks.append(Task(description=f"step {n}", agent=agent, context=list(tasks)))

    class LearnsTheSecret:
        def on_event(self, event: Any) -> None:
            if isinstance(event, TaskCompleted) and event.task_index == 3:
                register_secret(LATE)

    output = Ensemble(tasks=tasks, llm=model, listeners=[LearnsTheSecret()]).run()
    trace = output.trace
    assert trace is not None
    prompts = [task.user_prompt or "" for task in trace.tasks]
    assert LATE in model.requests[2].last_user_content  # the model did see it: it was no secret yet
    assert LATE in prompts[2]  # redacted by the policy of its time
    for prompt in prompts[3:]:
        assert len(prompt) > 4096 and "\n\n### " in prompt
        assert LATE not in prompt and "***" in prompt
        assert prompt.count("many plain words") >= 400
    sent = [request.last_user_content for request in model.requests[3:]]
    assert [p.replace("***", LATE) for p in prompts[3:]] == sent
