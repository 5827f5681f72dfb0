"""The immediate-return rule against an independent reference, on random responses.

The reference reads API.md section 4 literally, one call at a time: a response returns at once
iff nothing failed, and either its last call is IMMEDIATE_IF_LAST or none of its calls wants its
output back at the model (TO_LLM). Then the same responses are run through a real executor with
tools of those behaviours, some failing, checking what the task ends with and how many model
calls it took.
"""

from __future__ import annotations

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from agentensemble import AgentTool, ReturnBehavior, ToolResolver, ToolResult
from agentensemble.execution.agent_executor import AgentExecutor, AgentTask
from agentensemble.testing import ScriptedChatModel, tool_calls
from agentensemble.tools import should_return_immediately

T = ReturnBehavior.TO_LLM
I = ReturnBehavior.IMMEDIATE  # noqa: E741 - the table's own letter
L = ReturnBehavior.IMMEDIATE_IF_LAST

behaviors = st.lists(st.sampled_from([T, I, L]), max_size=8)


def reference(calls: list[ReturnBehavior], any_failed: bool) -> bool:
    """API.md section 4, read call by call."""
    if any_failed or not calls:
        return False
    ends_the_task = True
    for position, behavior in enumerate(calls):
        is_last = position == len(calls) - 1
        if behavior is L and is_last:
            return True
        if behavior is T:
            ends_the_task = False
    return ends_the_task


@settings(max_examples=500, deadline=None)
@given(calls=behaviors, any_failed=st.booleans())
def test_the_rule_agrees_with_the_reference(calls: list[ReturnBehavior], any_failed: bool) -> None:
    assert should_return_immediately(calls, any_failed) is reference(calls, any_failed)


@settings(max_examples=200, deadline=None)
@given(calls=behaviors.filter(lambda c: len(c) >= 2), data=st.data())
def test_only_the_last_call_and_the_set_of_behaviours_matter(
    calls: list[ReturnBehavior], data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(calls[:-1]), label="earlier calls reordered")
    assert should_return_immediately([*shuffled, calls[-1]], False) is should_return_immediately(
        calls, False
    )


# -- through the executor --------------------------------------------------------------------


class Behaving(AgentTool):
    """A tool with a given return behaviour that succeeds or fails."""

    def __init__(self, behavior: ReturnBehavior, fails: bool) -> None:
        self.return_behavior = behavior
        self.fails = fails
        self.name = f"{behavior.value}_{'fails' if fails else 'ok'}"
        self.description = f"A {behavior.value} tool that {'fails' if fails else 'succeeds'}."

    def execute(self, input: str) -> ToolResult:
        if self.fails:
            return ToolResult.failure(f"{self.name} failed on {input}")
        return ToolResult.success(f"{self.name}:{input}")


TOOLS = [Behaving(b, fails) for b in (T, I, L) for fails in (False, True)]
BY_KEY = {(t.return_behavior, t.fails): t for t in TOOLS}
calls_with_failures = st.lists(
    st.tuples(st.sampled_from([T, I, L]), st.booleans() | st.just(False)), min_size=1, max_size=5
)


@settings(max_examples=100, deadline=None)
@given(calls=calls_with_failures, unknown_tool=st.booleans())
def test_the_executor_ends_the_task_exactly_when_the_rule_says(
    calls: list[tuple[ReturnBehavior, bool]], unknown_tool: bool
) -> None:
    chosen = [BY_KEY[call] for call in calls]
    requested = [(tool.name, {"input": f"#{i}"}) for i, tool in enumerate(chosen)]
    if unknown_tool:  # a call to a tool that does not exist counts as a failed call
        requested.append(("no_such_tool", {"input": "?"}))
    model = ScriptedChatModel([tool_calls(*requested), "the model's own answer"])
    task = AgentTask(
        role="Tester",
        goal="Exercise the return rule",
        description="Call the tools",
        expected_output="Anything",
        model=model,
        tools=ToolResolver().resolve(TOOLS),
    )

    output = anyio.run(AgentExecutor(task).run)

    behaviors_in_order = [t.return_behavior for t in chosen] + ([T] if unknown_tool else [])
    failed = unknown_tool or any(t.fails for t in chosen)
    expected = reference(behaviors_in_order, failed)
    assert output.returned_immediately is expected
    assert [r.name for r in output.tool_calls] == [name for name, _ in requested]
    if expected:
        assert output.raw == "\n\n".join(f"{t.name}:#{i}" for i, t in enumerate(chosen))
        assert len(model.requests) == 1
    else:
        assert output.raw == "the model's own answer"
        assert len(model.requests) == 2
        # the model saw every result, in call order, right after its own tool-call message
        assert len(model.requests[1].tool_results) == len(requested)
