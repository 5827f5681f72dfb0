r"""Human review on the terminal: approve a tool call, then review the agent's report.

Run it with ``python examples/console_review.py`` and answer at the prompts:

- the agent wants to delete old log files (simulated: nothing on your disk is touched), and the
  ``delete_files`` tool requires approval: ``c`` (or Enter) approves, ``e`` then new JSON
  arguments edits the call (e.g. ``e {"pattern": "*.log.2"}``), ``x`` rejects it and the agent
  adapts;
- then the task's report is reviewed: ``c`` accepts it, ``e`` then your text replaces it, ``x``
  stops the run (the report is kept).

Non-interactively, feed the answers on stdin (one per line)::

    echo -e "c\nc" | python examples/console_review.py

End of input, if the answers run out, counts as "no answer": the tool call is rejected and the
report review stops the run; it is never taken as approval.

With no API key it runs offline on a scripted model (and says so); with ``OPENAI_API_KEY`` set
it uses ``openai/gpt-4o-mini``, and ``AGENTENSEMBLE_MODEL`` names any litellm model. See
docs/review.md.
"""

from __future__ import annotations

import fnmatch
import os
from datetime import timedelta

from agentensemble import Agent, ChatModel, Ensemble, Task, tool
from agentensemble.llm.types import ChatResponse, Message, ToolSpec
from agentensemble.testing import FunctionChatModel, tool_call
from agentensemble_review import ConsoleReviewHandler, Review

# A pretend disk: the tool "deletes" from this dict, never from the real file system.
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


def offline_janitor(messages: list[Message], tools: list[ToolSpec] | None) -> ChatResponse | str:
    """The scripted offline model: asks to delete rotated logs, then reports what happened."""
    last = messages[-1]
    if last.get("role") != "tool":
        return tool_call("delete_files", {"pattern": "*.log.[0-9]"})
    result = str(last.get("content"))
    if result.startswith("Error:"):
        return f"I deleted nothing: {result.removeprefix('Error: ')}. The logs are untouched."
    return f"Cleanup done. {result}"


def choose_model() -> tuple[str | ChatModel, str]:
    """A real model when the environment names one, else the scripted offline model."""
    name = os.environ.get("AGENTENSEMBLE_MODEL")
    if name:
        return name, f"Using model {name}."
    if os.environ.get("OPENAI_API_KEY"):
        return "openai/gpt-4o-mini", "Using model openai/gpt-4o-mini (OPENAI_API_KEY is set)."
    return (
        FunctionChatModel(offline_janitor),
        "Offline demo: no API key found, using a scripted model (set OPENAI_API_KEY).",
    )


def build(model: str | ChatModel) -> Ensemble:
    janitor = Agent(
        role="Janitor",
        goal="Free disk space without losing anything still in use",
        tools=[delete_files],
        llm=model,
    )
    cleanup = Task(
        description=(
            "Free space in /var/log/app by deleting rotated log files (app.log.1, app.log.2, "
            "...), never the live app.log. Then report what was deleted."
        ),
        expected_output="One or two sentences: what was deleted and how much space was freed",
        agent=janitor,
        review=Review.required("Is this report accurate?", timeout=timedelta(minutes=10)),
    )
    return Ensemble(tasks=[cleanup], review_handler=ConsoleReviewHandler())


def main() -> int:
    model, banner = choose_model()
    print(banner, flush=True)
    result = build(model).run()
    output = result.task_outputs[0] if result.task_outputs else None
    print()
    for call in output.tool_calls if output else []:
        print(f"Tool call: {call.name}({call.arguments}) -> {call.output}")
    print(f"Report: {result.raw}")
    print(f"Files left: {', '.join(DISK)}")
    print(f"Exit: {result.exit_reason.value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
