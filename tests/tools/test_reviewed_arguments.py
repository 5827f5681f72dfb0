"""What the reviewer approves is exactly what runs, and the record says what ran.

Attacks: a model sends ``{"to": "alice", "amount": 10, "to": "mallory"}``: the reviewer read
"alice" in the raw JSON while ``json.loads`` kept "mallory", so a call ran that nobody saw. A
model writes ``"rm \\u002drf"`` so a conditional rule looking for ``rm -rf`` in the raw text
lets the call through unasked. Duplicate keys are now refused as bad arguments (for every tool
shape), and the reviewer and the rules read the validated arguments as canonical JSON.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from agentensemble import (
    AbstractAgentTool,
    Agent,
    AgentTool,
    Ensemble,
    EnsembleOutput,
    Task,
    ToolCallRecord,
    ToolPipeline,
    ToolResult,
    TypedAgentTool,
    tool,
)
from agentensemble.testing import ScriptedChatModel, tool_call
from agentensemble_review import Continue, Edit, ReviewDecision, ScriptedReviewHandler

RAN: list[Any] = []


@pytest.fixture(autouse=True)
def _clean() -> None:
    RAN.clear()


@tool(requires_approval=True)
def transfer(to: str, amount: int, memo: str = "") -> str:
    """Send money."""
    RAN.append((to, amount, memo))
    return f"sent {amount} to {to}"


class Shell(AbstractAgentTool):
    name = "shell"
    description = "Run a command"
    requires_approval = True

    def do_execute(self, input: str) -> str:
        RAN.append(input)
        return "ran"


class PlainShell(AgentTool):
    name = "plain_shell"
    description = "Run a command (plain AgentTool)"
    requires_approval = True

    def execute(self, input: str) -> ToolResult:
        RAN.append(input)
        return ToolResult.success("ran")


class PlainJson(AgentTool):
    name = "plain_json"
    description = "A plain AgentTool reading JSON arguments itself"
    requires_approval = True

    def parameters_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"to": {"type": "string"}}}

    def execute(self, input: str) -> ToolResult:
        RAN.append(json.loads(input)["to"])
        return ToolResult.success("ran")


class Payee(BaseModel):
    to: str


class TypedPay(TypedAgentTool[Payee]):
    name = "typed_pay"
    description = "Pay someone"
    requires_approval = True

    def do_execute(self, input: Payee) -> str:
        RAN.append(input.to)
        return "paid"


def run(
    tools: list[object], calls: list[tuple[str, str]], decisions: list[ReviewDecision]
) -> tuple[EnsembleOutput, ScriptedReviewHandler, ScriptedChatModel]:
    model = ScriptedChatModel([*(tool_call(name, text) for name, text in calls), "finished"])
    reviewer = ScriptedReviewHandler(decisions)
    agent = Agent(role="Clerk", goal="Use the tools", tools=tools, llm=model)
    output = Ensemble(tasks=[Task(description="Go", agent=agent)], review_handler=reviewer).run()
    return output, reviewer, model


def records(output: EnsembleOutput) -> list[ToolCallRecord]:
    return output.task_outputs[0].tool_calls


# -- duplicate keys ------------------------------------------------------------------------

DUPLICATES = [
    (transfer, "transfer", '{"to": "alice", "amount": 10, "to": "mallory"}', "to"),
    (Shell(), "shell", '{"input": "ls", "input": "rm -rf /"}', "input"),
    (PlainShell(), "plain_shell", '{"input": "ls", "input": "rm -rf /"}', "input"),
    (PlainJson(), "plain_json", '{"to": "alice", "to": "mallory"}', "to"),
    (TypedPay(), "typed_pay", '{"to": "alice", "to": "mallory"}', "to"),
    (ToolPipeline([Shell()], name="pipe"), "pipe", '{"input": "a", "input": "b"}', "input"),
    (transfer, "transfer", '{"to": "alice", "amount": 1, "memo": {"a": 1, "a": 2}}', "a"),
]


@pytest.mark.parametrize(
    ("tool_", "name", "arguments", "key"),
    DUPLICATES,
    ids=["@tool", "AbstractAgentTool", "AgentTool", "AgentTool+schema", "Typed", "pipe", "nested"],
)
def test_a_key_sent_twice_is_refused_before_any_review_and_the_model_is_told(
    tool_: object, name: str, arguments: str, key: str
) -> None:
    output, reviewer, model = run([tool_], [(name, arguments)], [])
    assert RAN == []
    assert reviewer.requests == []
    (record,) = records(output)
    assert not record.is_success
    assert f"duplicate key '{key}'" in record.output
    assert f"duplicate key '{key}'" in model.requests[1].tool_results[0]


# -- the reviewer reads what runs ----------------------------------------------------------


def test_the_reviewer_reads_the_validated_arguments_with_defaults_not_the_models_text() -> None:
    sent = '{"amount": "10",\n "to": "al\\u0069ce"}'
    output, reviewer, _ = run([transfer], [("transfer", sent)], [Continue()])
    (request,) = reviewer.requests
    assert request.output == '{"to": "alice", "amount": 10, "memo": ""}'
    assert RAN == [("alice", 10, "")]
    (record,) = records(output)
    assert record.arguments == sent  # not edited: the model's text, as sent
    assert record.model_arguments is None


def test_a_conditional_rule_reads_the_arguments_as_the_reviewer_sees_them() -> None:
    @tool(requires_approval=lambda shown: "rm -rf" in shown)
    def run_command(command: str) -> str:
        """Run a shell command."""
        RAN.append(command)
        return "ran"

    _, reviewer, _ = run(
        [run_command], [("run_command", '{"command": "rm \\u002drf /"}')], [Continue()]
    )
    assert len(reviewer.requests) == 1
    assert reviewer.requests[0].output == '{"command": "rm -rf /"}'


def test_a_plain_tool_taking_json_runs_on_exactly_the_text_the_reviewer_read() -> None:
    _, reviewer, _ = run([PlainJson()], [("plain_json", '{"to":\n"al\\u0069ce"}')], [Continue()])
    assert reviewer.requests[0].output == '{"to": "alice"}'
    assert RAN == ["alice"]


# -- edits: validated again, and recorded as what ran --------------------------------------


@pytest.mark.parametrize(
    ("tool_", "name", "sent", "edit", "ran", "recorded"),
    [
        (
            transfer,
            "transfer",
            '{"to": "ann", "amount": 500}',
            '{"to": "ann", "amount": "50"}',
            ("ann", 50, ""),
            '{"to": "ann", "amount": 50, "memo": ""}',
        ),
        (Shell(), "shell", '{"input": "rm -rf /"}', "ls", "ls", '{"input": "ls"}'),
        (PlainShell(), "plain_shell", '{"input": "rm -rf /"}', "ls", "ls", '{"input": "ls"}'),
        (PlainJson(), "plain_json", '{"to": "mallory"}', '{"to": "ann"}', "ann", '{"to": "ann"}'),
        (TypedPay(), "typed_pay", '{"to": "mallory"}', '{"to":"ann"}', "ann", '{"to": "ann"}'),
    ],
    ids=["@tool", "AbstractAgentTool", "AgentTool", "AgentTool+schema", "Typed"],
)
def test_an_edit_runs_and_the_record_keeps_both_the_edited_and_the_models_arguments(
    tool_: object, name: str, sent: str, edit: str, ran: object, recorded: str
) -> None:
    output, _, _ = run([tool_], [(name, sent)], [Edit(edit)])
    assert [ran] == RAN
    (record,) = records(output)
    assert record.is_success
    assert record.arguments == recorded
    assert record.model_arguments == sent


@pytest.mark.parametrize(
    ("tool_", "name", "sent", "edit"),
    [
        (transfer, "transfer", '{"to": "ann", "amount": 5}', '{"to": "ann", "amount": "lots"}'),
        (transfer, "transfer", '{"to": "ann", "amount": 5}', '{"to": "a", "amount": 5, "to": "m"}'),
        (PlainJson(), "plain_json", '{"to": "ann"}', '{"to": "a", "to": "m"}'),
        (TypedPay(), "typed_pay", '{"to": "ann"}', "not json"),
    ],
    ids=["@tool invalid", "@tool duplicate key", "AgentTool+schema duplicate", "Typed not JSON"],
)
def test_an_invalid_edit_runs_nothing_and_says_the_edit_was_at_fault(
    tool_: object, name: str, sent: str, edit: str
) -> None:
    output, _, _ = run([tool_], [(name, sent)], [Edit(edit)])
    assert RAN == []
    (record,) = records(output)
    assert not record.is_success
    assert "edited input is invalid" in record.output
    assert record.arguments == sent
    assert record.model_arguments is None


def test_an_edit_to_a_pipeline_step_is_the_steps_business_not_the_pipeline_calls() -> None:
    pipe = ToolPipeline([Shell()], name="pipe")
    output, _, _ = run([pipe], [("pipe", '{"input": "rm -rf /"}')], [Edit("ls")])
    assert RAN == ["ls"]
    (record,) = records(output)
    assert record.arguments == '{"input": "rm -rf /"}'
    assert record.model_arguments is None


def test_an_edit_of_the_pipelines_own_approval_is_recorded() -> None:
    pipe = ToolPipeline([PlainEcho()], name="pipe")
    pipe.requires_approval = True
    output, _, _ = run([pipe], [("pipe", '{"input": "a"}')], [Edit("b")])
    (record,) = records(output)
    assert record.output == "b"
    assert record.arguments == '{"input": "b"}'
    assert record.model_arguments == '{"input": "a"}'


class PlainEcho(AgentTool):
    name = "plain_echo"
    description = "Echo"

    def execute(self, input: str) -> ToolResult:
        return ToolResult.success(input)


def mcp_tool() -> object:
    from types import SimpleNamespace

    from agentensemble.mcp.tool import MCPTool

    async def call(name: str, arguments: dict[str, Any]) -> Any:
        RAN.append(arguments)
        return SimpleNamespace(content=[SimpleNamespace(type="text", text="sent")])

    return MCPTool(
        name="mcp_pay",
        remote_name="pay",
        description="Pay over MCP",
        input_schema={"type": "object", "properties": {"to": {"type": "string"}}},
        call=call,
        origin="test",
        requires_approval=True,
    )


def test_an_mcp_tool_is_reviewed_on_its_parsed_arguments_and_refuses_duplicate_keys() -> None:
    _, reviewer, _ = run([mcp_tool()], [("mcp_pay", '{"to":\n"al\\u0069ce"}')], [Continue()])
    assert reviewer.requests[0].output == '{"to": "alice"}'
    assert RAN == [{"to": "alice"}]
    RAN.clear()
    output, reviewer, _ = run([mcp_tool()], [("mcp_pay", '{"to": "a", "to": "m"}')], [])
    assert RAN == [] and reviewer.requests == []
    assert "duplicate key 'to'" in records(output)[0].output


def test_an_edit_to_an_mcp_tool_is_validated_and_recorded_as_run() -> None:
    output, _, _ = run([mcp_tool()], [("mcp_pay", '{"to": "mallory"}')], [Edit('{"to":"ann"}')])
    assert RAN == [{"to": "ann"}]
    (record,) = records(output)
    assert record.arguments == '{"to": "ann"}'
    assert record.model_arguments == '{"to": "mallory"}'


def test_the_arguments_are_rendered_for_a_reviewer_only_when_a_call_can_need_approval() -> None:
    # the canonical JSON a reviewer and a conditional rule read is not built for a tool that
    # can never ask (most tools, on every call); any rule, or needs_approval overridden, can
    from agentensemble.tools.decorator import FunctionTool, tool_definition
    from agentensemble.tools.instrumented import may_ask

    def as_tool(fn: Any, cls: type[FunctionTool] = FunctionTool) -> FunctionTool:
        definition = tool_definition(fn)
        assert definition is not None
        return cls(definition, fn)

    def body(command: str) -> str:
        """Run a shell command."""
        return "ran"

    class Asks(FunctionTool):
        def needs_approval(self, input: str) -> bool:
            return "rm" in input

    assert not may_ask(as_tool(tool(body)))
    assert may_ask(as_tool(tool(requires_approval=True)(body)))
    assert may_ask(as_tool(tool(requires_approval=lambda shown: "rm" in shown)(body)))
    assert may_ask(as_tool(tool(body), Asks))
