"""ToolResolver: every kind of tool becomes one ExecutableTool; run() never crashes a run."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any

import pytest
from pydantic import BaseModel

import agentensemble.tools.resolver as resolver_module
from agentensemble.errors import (
    ConfigurationError,
    ExitEarlyError,
    ToolArgumentsError,
    ToolNameError,
)
from agentensemble.tools import (
    AbstractAgentTool,
    AgentTool,
    ReturnBehavior,
    ToolContext,
    ToolResolver,
    ToolResult,
    TypedAgentTool,
    current_tool_context,
    tool,
    use_tool_context,
)
from agentensemble.tools.resolver import INPUT_PARAMETERS, extract_input
from agentensemble_review import Continue, ExitEarly, ReviewRequest

# -- one tool of every shape ----------------------------------------------------------------


class Reverse(AgentTool):
    name = "reverse"
    description = "Reverse the input text"

    def execute(self, input: str) -> ToolResult:
        return ToolResult.success(input[::-1])


class Count(AbstractAgentTool):
    name = "count"
    description = "Count the words"
    return_behavior = ReturnBehavior.IMMEDIATE_IF_LAST

    def do_execute(self, input: str) -> str:
        return str(len(input.split()))


class Query(BaseModel):
    text: str
    limit: int = 3


class Search(TypedAgentTool[Query]):
    name = "search"
    description = "Search the archive"

    def do_execute(self, input: Query) -> str:
        return f"{input.limit} hits for {input.text}"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Notebook:
    """An object whose decorated methods are tools; its other methods are not."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    @tool
    def write_note(self, text: str) -> str:
        """Write a note."""
        self.notes.append(text)
        return f"{len(self.notes)} notes"

    @tool(return_behavior=ReturnBehavior.IMMEDIATE)
    async def read_notes(self) -> list[str]:
        """Read all notes."""
        return self.notes

    @staticmethod
    @tool
    def today() -> str:
        """Today's date."""
        return "2024-05-01"

    def helper(self) -> None:
        """Not a tool."""


INPUT_SPEC = INPUT_PARAMETERS


def _spec(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def test_every_shape_resolves_into_specs_in_input_order() -> None:
    resolved = ToolResolver().resolve([Reverse(), Count(), Search(), add, Notebook()])
    assert resolved.names == [
        "reverse",
        "count",
        "search",
        "add",
        "write_note",
        "read_notes",
        "today",
    ]
    int_param = {"type": "integer"}
    assert resolved.specs == [
        _spec("reverse", "Reverse the input text", INPUT_SPEC),
        _spec("count", "Count the words", INPUT_SPEC),
        _spec(
            "search",
            "Search the archive",
            {
                "type": "object",
                "properties": {"text": {"type": "string"}, "limit": {**int_param, "default": 3}},
                "required": ["text"],
            },
        ),
        _spec(
            "add",
            "Add two integers.",
            {
                "type": "object",
                "properties": {"a": int_param, "b": int_param},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
        ),
        _spec(
            "write_note",
            "Write a note.",
            {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
                "additionalProperties": False,
            },
        ),
        _spec(
            "read_notes",
            "Read all notes.",
            {"type": "object", "properties": {}, "additionalProperties": False},
        ),
        _spec(
            "today",
            "Today's date.",
            {"type": "object", "properties": {}, "additionalProperties": False},
        ),
    ]


def test_the_input_parameter_of_an_agent_tool() -> None:
    assert INPUT_SPEC == {
        "type": "object",
        "properties": {"input": {"type": "string", "description": "The input to pass to the tool"}},
        "required": ["input"],
    }


def test_executables_carry_behaviour_and_lookup() -> None:
    resolved = ToolResolver().resolve([Reverse(), Count(), Notebook()])
    count = resolved.get("count")
    assert count is not None and count.return_behavior is ReturnBehavior.IMMEDIATE_IF_LAST
    read_notes = resolved.get("read_notes")
    assert read_notes is not None and read_notes.return_behavior is ReturnBehavior.IMMEDIATE
    assert resolved.get("missing") is None
    assert "reverse" in resolved and len(resolved) == 5
    assert [t.name for t in resolved] == resolved.names


def test_empty_tool_list() -> None:
    resolved = ToolResolver().resolve([])
    assert (resolved.specs, resolved.names, len(resolved)) == ([], [], 0)
    assert resolved.approval_required is False


@pytest.mark.anyio
@pytest.mark.usefixtures("tool_context")
async def test_bound_methods_act_on_their_object() -> None:
    notebook = Notebook()
    resolved = ToolResolver().resolve([notebook])
    write, read = resolved.get("write_note"), resolved.get("read_notes")
    assert write is not None and read is not None
    assert (await write.run('{"text": "buy milk"}')).output == "1 notes"
    assert notebook.notes == ["buy milk"]
    assert (await read.run("{}")).output == '["buy milk"]'

    single = ToolResolver().resolve([Notebook().write_note])  # one bound method on its own
    assert single.names == ["write_note"]


def test_subclasses_inherit_and_override_tool_methods() -> None:
    class Shorter(Notebook):
        def read_notes(self) -> list[str]:  # type: ignore[override]  # no longer a tool
            return []

        @tool
        def erase(self) -> None:
            """Erase everything."""

    assert ToolResolver().resolve([Shorter()]).names == ["write_note", "today", "erase"]


# -- configuration errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (42, "Object of type 'int' is not a tool: pass an AgentTool instance"),
        ("add", "Object of type 'str' is not a tool"),
        (lambda x: x, "Object of type 'function' is not a tool"),
        (Reverse, "Got the class 'Reverse', not an instance: pass Reverse(...)"),
        (Notebook.write_note, "Tool 'write_note' is a method: pass the object that carries it"),
    ],
)
def test_things_that_are_not_tools(item: object, message: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        ToolResolver().resolve([item])
    assert message in str(caught.value)


def test_the_not_a_tool_message_lists_the_accepted_forms() -> None:
    with pytest.raises(ConfigurationError) as caught:
        ToolResolver().resolve([3.14])
    assert str(caught.value) == (
        "Object of type 'float' is not a tool: pass an AgentTool instance (an AgentTool, "
        "AbstractAgentTool or TypedAgentTool subclass, a ToolPipeline, a built-in tool), a "
        "function decorated with @tool, an object whose methods are decorated with @tool, or a "
        "tool source such as an MCP server"
    )


def test_duplicate_names_are_rejected() -> None:
    @tool(name="reverse")
    def also_reverse(text: str) -> str:
        return text[::-1]

    with pytest.raises(ConfigurationError) as caught:
        ToolResolver().resolve([Reverse(), also_reverse])
    assert str(caught.value) == "Duplicate tool name: 'reverse'"

    with pytest.raises(ConfigurationError, match="Duplicate tool name: 'write_note'"):
        ToolResolver().resolve([Notebook(), Notebook()])


def test_the_same_object_listed_twice_counts_once() -> None:
    reverse, notebook = Reverse(), Notebook()
    resolved = ToolResolver().resolve([reverse, add, notebook, reverse, add, notebook.today])
    assert resolved.names == ["reverse", "add", "write_note", "read_notes", "today"]


@pytest.mark.parametrize("name", [None, "", "two words", "x" * 65, 7])
def test_bad_agent_tool_names(name: object) -> None:
    class Named(AgentTool):
        description = "A tool with a bad name"

        def execute(self, input: str) -> ToolResult:
            return ToolResult.success()

    named = Named()
    if name is not None:
        named.name = name  # type: ignore[assignment]
    with pytest.raises(ToolNameError, match="Named: Tool name"):
        ToolResolver().resolve([named])


def test_a_tool_without_a_body_is_a_configuration_error() -> None:
    class Empty(AgentTool):
        name = "empty"
        description = "Does nothing at all"

    class EmptyToo(AbstractAgentTool):
        name = "empty_too"
        description = "Does nothing either"

    with pytest.raises(ConfigurationError, match="implement execute"):
        ToolResolver().resolve([Empty()])
    with pytest.raises(ConfigurationError, match="implement do_execute"):
        ToolResolver().resolve([EmptyToo()])


def test_invalid_return_behavior() -> None:
    reverse = Reverse()
    reverse.return_behavior = "sometimes"  # type: ignore[assignment]
    with pytest.raises(ConfigurationError, match="invalid return_behavior"):
        ToolResolver().resolve([reverse])


def test_description_falls_back_to_the_class_docstring() -> None:
    class Documented(AgentTool):
        """Says hello."""

        name = "documented"

        def execute(self, input: str) -> ToolResult:
            return ToolResult.success("hello")

    (spec,) = ToolResolver().resolve([Documented()]).specs
    assert spec["function"]["description"] == "Says hello."


def test_specs_are_logged_at_debug(tool_logs: pytest.LogCaptureFixture) -> None:
    ToolResolver().resolve([add])
    (record,) = [r for r in tool_logs.records if r.getMessage() == "tool specs"]
    assert json.loads(record.specs)[0]["function"]["name"] == "add"  # type: ignore[attr-defined]


def test_spec_text_is_built_only_when_debug_is_enabled(
    tool_logs: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # with many tools the JSON text of every spec is costly: never built for a discarded line
    logger = logging.getLogger("agentensemble")
    dumped: list[object] = []
    real_dumps = resolver_module.json.dumps

    def counting_dumps(value: object, **kwargs: Any) -> str:
        dumped.append(value)
        return real_dumps(value, **kwargs)

    monkeypatch.setattr(resolver_module.json, "dumps", counting_dumps)
    logger.setLevel(logging.INFO)  # the fixture restores the level afterwards
    ToolResolver().resolve([add])
    assert dumped == []
    logger.setLevel(logging.DEBUG)
    ToolResolver().resolve([add])
    assert len(dumped) == 1


# -- approval flags -------------------------------------------------------------------------


class Guarded(AbstractAgentTool):
    name = "guarded"
    description = "Needs approval"
    requires_approval = True

    def do_execute(self, input: str) -> str:
        return "done"


@tool(requires_approval=lambda arguments: "rm" in arguments)
def shell(command: str) -> str:
    """Run a command."""
    return command


def test_approval_required_is_declared_by_any_tool() -> None:
    assert ToolResolver().resolve([Reverse(), add]).approval_required is False
    assert ToolResolver().resolve([Reverse(), Guarded()]).approval_required is True
    assert ToolResolver().resolve([shell]).approval_required is True
    guarded = ToolResolver().resolve([Guarded()]).get("guarded")
    assert guarded is not None and guarded.requires_approval is True


# -- running: nothing a model sends can crash the run --------------------------------------


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"input": "abc"}', "abc"),
        ('{"input": "abc", "note": "ignored"}', "abc"),
        ('"abc"', "abc"),  # a bare JSON string
        ('{"query": "abc"}', "abc"),  # one other key: taken as the input
        ('{"input": 42}', "42"),
        ('{"input": {"a": [1]}}', '{"a": [1]}'),
    ],
)
def test_extract_input_is_lenient_about_shape(arguments: str, expected: str) -> None:
    assert extract_input(arguments, "t") == expected


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("abc", "Invalid arguments for 't': not valid JSON (Expecting value at line 1 column 1)."),
        ("{}", "Invalid arguments for 't': input: Field required."),
        ("", "Invalid arguments for 't': input: Field required."),
        ('{"a": "1", "b": "2"}', "Invalid arguments for 't': input: Field required."),
        ('{"input": null}', "Invalid arguments for 't': input: Field required."),
        ("[1]", "Invalid arguments for 't': expected a JSON object."),
    ],
)
def test_extract_input_is_strict_about_json(arguments: str, message: str) -> None:
    with pytest.raises(ToolArgumentsError) as caught:
        extract_input(arguments, "t")
    assert str(caught.value) == message + ' Send {"input": "<text>"}.'


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("reverse", '{"input": "abc"}', ToolResult.success("cba")),
        ("count", '{"input": "one two three"}', ToolResult.success("3")),
        ("search", '{"text": "otters"}', ToolResult.success("3 hits for otters")),
        ("add", '{"a": 1, "b": 2}', ToolResult.success("3", structured_output=3)),
        (
            "reverse",
            "{not json",
            ToolResult.failure(
                "Invalid arguments for 'reverse': not valid JSON (Expecting property name "
                'enclosed in double quotes at line 1 column 2). Send {"input": "<text>"}.'
            ),
        ),
        (
            "search",
            '{"text": 5, "limit": "many"}',
            ToolResult.failure(
                "Invalid arguments for 'search': text: Input should be a valid string; "
                "limit: Input should be a valid integer, unable to parse string as an integer"
            ),
        ),
        (
            "add",
            "{'a': 1}",
            ToolResult.failure(
                "Invalid arguments for 'add': not valid JSON (Expecting property name enclosed "
                "in double quotes at line 1 column 2). Send the arguments as a JSON object."
            ),
        ),
    ],
)
@pytest.mark.usefixtures("tool_context")
async def test_run_turns_every_mistake_into_a_failure_result(
    name: str, arguments: str, expected: ToolResult
) -> None:
    resolved = ToolResolver().resolve([Reverse(), Count(), Search(), add])
    executable = resolved.get(name)
    assert executable is not None
    assert await executable.run(arguments) == expected


class Flaky(AgentTool):
    """A plain AgentTool (no instrumentation) that raises and returns loose values."""

    name = "flaky"
    description = "Misbehaves on demand"

    def execute(self, input: str) -> ToolResult:
        if input == "raise":
            raise RuntimeError("disk on fire")
        if input == "none":
            return None  # type: ignore[return-value]
        if input == "str":
            return "plain text"  # type: ignore[return-value]
        if input == "exit":
            raise ExitEarlyError("stop everything")
        raise ConfigurationError("missing credentials")


@pytest.mark.anyio
async def test_plain_agent_tools_are_made_safe_logged_and_counted(
    tool_context: ToolContext, tool_logs: pytest.LogCaptureFixture
) -> None:
    flaky = ToolResolver().resolve([Flaky()]).get("flaky")
    assert flaky is not None
    assert await flaky.run('{"input": "raise"}') == ToolResult.failure("RuntimeError: disk on fire")
    assert await flaky.run('{"input": "none"}') == ToolResult.success("")
    assert await flaky.run('{"input": "str"}') == ToolResult.success("plain text")
    assert await flaky.run("oops") == ToolResult.failure(
        "Invalid arguments for 'flaky': not valid JSON (Expecting value at line 1 column 1). "
        'Send {"input": "<text>"}.'
    )
    warnings = [r.getMessage() for r in tool_logs.records if r.levelno == logging.WARNING]
    assert warnings[0] == "flaky(raise) -> Error: RuntimeError: disk on fire"
    crash = next(r for r in tool_logs.records if r.levelno == logging.WARNING)
    assert crash.exc_info is not None and crash.exc_info[0] is RuntimeError
    metrics = tool_context.metrics["flaky"]
    assert (metrics.calls, metrics.successes, metrics.failures, metrics.errors) == (4, 2, 1, 1)


@pytest.mark.anyio
@pytest.mark.usefixtures("tool_context")
async def test_exit_early_and_configuration_errors_propagate() -> None:
    flaky = ToolResolver().resolve([Flaky()]).get("flaky")
    assert flaky is not None
    with pytest.raises(ExitEarlyError):
        await flaky.run('{"input": "exit"}')
    with pytest.raises(ConfigurationError, match="missing credentials"):
        await flaky.run('{"input": "config"}')


@pytest.mark.anyio
async def test_approval_without_a_handler_stops_the_run(tool_context: ToolContext) -> None:
    guarded = ToolResolver().resolve([Guarded()]).get("guarded")
    assert guarded is not None
    with pytest.raises(ConfigurationError, match="requires approval"):
        await guarded.run('{"input": "x"}')


# -- concurrency ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_sync_tools_of_one_turn_run_concurrently() -> None:
    barrier = threading.Barrier(3, timeout=5)

    @tool
    def meet(who: str) -> str:
        """Waits until all three calls are running at once."""
        barrier.wait()  # raises BrokenBarrierError if the calls ran one after the other
        return who

    resolved = ToolResolver().resolve([meet])
    runner = resolved.get("meet")
    assert runner is not None
    with use_tool_context(ToolContext()):
        results = await asyncio.gather(
            *(runner.run(json.dumps({"who": who})) for who in ["a", "b", "c"])
        )
    assert [r.output for r in results] == ["a", "b", "c"]  # results follow call order


class Recorder:
    def __init__(self, decision: object) -> None:
        self.decision = decision
        self.seen: list[ReviewRequest] = []

    def review(self, request: ReviewRequest) -> object:
        self.seen.append(request)
        return self.decision


@pytest.mark.anyio
async def test_concurrent_runs_sharing_one_tool_each_see_their_own_context() -> None:
    shared = Guarded()  # one object, used by two runs at the same time
    resolved = ToolResolver().resolve([shared])
    approve, reject = Recorder(Continue()), Recorder(ExitEarly("not today"))
    started = asyncio.Event()

    async def run(handler: Recorder, role: str) -> tuple[ToolResult, str]:
        with use_tool_context(ToolContext(review_handler=handler, agent_role=role)) as context:
            started.set()
            await asyncio.sleep(0)  # let the other run set its context too
            executable = resolved.get("guarded")
            assert executable is not None
            result = await executable.run('{"input": "go"}')
            assert context.metrics["guarded"].calls == 1
            return result, current_tool_context().agent_role

    (approved, role_a), (rejected, role_b) = await asyncio.gather(
        run(approve, "alpha"), run(reject, "beta")
    )
    assert approved == ToolResult.success("done") and role_a == "alpha"
    assert rejected == ToolResult.failure("Rejected by reviewer: not today") and role_b == "beta"
    assert len(approve.seen) == len(reject.seen) == 1
    assert shared.metrics.calls == 2  # the object's own counters see both runs
