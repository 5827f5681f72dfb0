"""The review examples' scenario: a janitor agent whose file deletion needs a human's approval.

Nothing on your disk is touched: ``delete_files`` deletes from the pretend disk ``DISK``.
"""

from __future__ import annotations

import fnmatch
from datetime import timedelta

from agentensemble import Agent, ChatModel, EnsembleOutput, Task, tool
from agentensemble.llm.types import ChatResponse, Message, ToolSpec
from agentensemble.testing import FunctionChatModel, tool_call
from agentensemble_review import Review

DISK = {
    "/var/log/app/app.log": 120_000,
    "/var/log/app/app.log.1": 800_000,
    "/var/log/app/app.log.2": 750_000,
    "/var/log/app/audit.log.1": 90_000,
}


@tool(requires_approval=True)
def delete_files(pattern: str) -> str:
    """Delete the files in /var/log/app whose name matches a glob pattern.

    Args:
        pattern: a glob on the file name, e.g. "*.log.1"
    """
    doomed = [path for path in DISK if fnmatch.fnmatch(path.rsplit("/", 1)[-1], pattern)]
    freed = sum(DISK.pop(path) for path in doomed)
    if not doomed:
        return f"No file matches {pattern!r}."
    return f"Deleted {len(doomed)} file(s), {freed // 1000} kB freed: " + ", ".join(doomed)


def _offline_janitor(messages: list[Message], tools: list[ToolSpec] | None) -> ChatResponse | str:
    last = messages[-1]
    if last.get("role") != "tool":
        return tool_call("delete_files", {"pattern": "*.log.[0-9]"})
    result = str(last.get("content"))
    if result.startswith("Error:"):
        return f"I deleted nothing: {result.removeprefix('Error: ')}. The logs are untouched."
    return f"Cleanup done. {result}"


def offline_model() -> ChatModel:
    """The scripted offline model: asks to delete rotated logs, then reports what happened."""
    return FunctionChatModel(_offline_janitor)


def cleanup_task(model: str | ChatModel, review_timeout: timedelta) -> Task:
    """The janitor's task; its report is reviewed after the task."""
    janitor = Agent(
        role="Janitor",
        goal="Free disk space without losing anything still in use",
        tools=[delete_files],
        llm=model,
    )
    return Task(
        description=(
            "Free space in /var/log/app by deleting rotated log files (app.log.1, app.log.2, "
            "...), never the live app.log. Then report what was deleted."
        ),
        expected_output="One or two sentences: what was deleted and how much space was freed",
        agent=janitor,
        review=Review.required("Is this report accurate?", timeout=review_timeout),
    )


def print_outcome(result: EnsembleOutput) -> None:
    """What the janitor did: its tool calls, its (reviewed) report, the files left, the exit."""
    output = result.task_outputs[0] if result.task_outputs else None
    print()
    for call in output.tool_calls if output else []:
        print(f"Tool call: {call.name}({call.arguments}) -> {call.output}")
    print(f"Report: {result.raw}")
    print(f"Files left: {', '.join(DISK)}")
    print(f"Exit: {result.exit_reason.value}")
