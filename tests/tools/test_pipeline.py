"""ToolPipeline: several tools, one tool call. Hand-off, strategies, adapters, nesting, approval,
context, metrics, threads and return behaviour."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from typing import Any

import pytest
from pydantic import BaseModel

from agentensemble import Agent, Ensemble, Task
from agentensemble.errors import ConfigurationError, ExitEarlyError, ToolNameError
from agentensemble.outputs import ReturnBehavior
from agentensemble.testing import ScriptedChatModel, text, tool_call
from agentensemble.tools import (
    AbstractAgentTool,
    AgentTool,
    ToolContext,
    ToolResolver,
    ToolResult,
    TypedAgentTool,
    current_tool_context,
    tool,
    use_tool_context,
)
from agentensemble.tools.pipeline import PipelineErrorStrategy, PipelineStep, ToolPipeline
from agentensemble_review import Continue, Edit, ExitEarly, ReviewTiming, ScriptedReviewHandler

FAIL_FAST = PipelineErrorStrategy.FAIL_FAST
CONTINUE = PipelineErrorStrategy.CONTINUE_ON_FAILURE

# -- steps used below: one of every kind ----------------------------------------------------


class Upper(AgentTool):
    """A plain AgentTool with a sync body."""

    name = "upper"
    description = "Upper-cases its input"

    def execute(self, input: str) -> ToolResult:
        return ToolResult.success(input.upper())


class Exclaim(AgentTool):
    """A plain AgentTool with an async body."""

    name = "exclaim"
    description = "Adds an exclamation mark"

    async def aexecute(self, input: str) -> ToolResult:
        await asyncio.sleep(0)
        return ToolResult.success(input + "!")


class Reverse(AbstractAgentTool):
    name = "reverse"
    description = "Reverses its input"

    def do_execute(self, input: str) -> str:
        return input[::-1]


class Recorder(AbstractAgentTool):
    """Echoes its input and remembers every input it was given."""

    description = "Echoes and records"

    def __init__(self, name: str) -> None:
        self.name = name
        self.inputs: list[str] = []

    def do_execute(self, input: str) -> str:
        self.inputs.append(input)
        return input


class Fails(AbstractAgentTool):
    name = "fails"
    description = "Always fails"

    def do_execute(self, input: str) -> ToolResult:
        return ToolResult.failure(f"cannot handle {input!r}")


class Raises(AbstractAgentTool):
    name = "raises"
    description = "Always raises"

    def do_execute(self, input: str) -> str:
        raise ValueError("the disk is full")


class FailsSilently(AgentTool):
    """A failure with no message at all."""

    name = "fails_silently"
    description = "Fails with no message"

    def execute(self, input: str) -> ToolResult:
        return ToolResult(is_success=False)


class Point(BaseModel):
    x: int
    y: int


class Distance(TypedAgentTool[Point]):
    """A typed-input step: its text input is parsed as JSON into Point."""

    name = "distance"
    description = "Manhattan distance from the origin"

    def do_execute(self, input: Point) -> str:
        return str(abs(input.x) + abs(input.y))


@tool
def shout(text: str) -> str:
    """One str parameter: gets the text as is."""
    return text.upper()


@tool
def double(n: int) -> int:
    """One int parameter: "21" fits it."""
    return n * 2


@tool
def total(prices: list[float]) -> float:
    """One list parameter: the text is parsed as JSON."""
    return sum(prices)


@tool
def money(amount: float, currency: str = "EUR") -> str:
    """One required parameter among optional ones."""
    return f"{amount:.2f} {currency}"


@tool
def join(words: list[str], sep: str) -> str:
    """Two required parameters: the text must be the JSON arguments object."""
    return sep.join(words)


@tool
def today() -> str:
    """No parameter: the text is ignored."""
    return "2024-05-01"


@tool
async def slow_async(text: str) -> str:
    """An async decorated function."""
    await asyncio.sleep(0)
    return f"<{text}>"


@tool
def to_point(text: str) -> dict[str, int]:
    """Parses 'x,y' into a point, kept as structured output too."""
    x, y = text.split(",")
    return {"x": int(x), "y": int(y)}


class Notebook:
    def __init__(self) -> None:
        self.notes: list[str] = []

    @tool
    def write_note(self, text: str) -> str:
        """Stores a note."""
        self.notes.append(text)
        return f"stored {len(self.notes)}"


@pytest.fixture(autouse=True)
def _tool_context(tool_context: ToolContext) -> ToolContext:
    """Every test runs in a fresh tool context (own metrics, no review handler)."""
    return tool_context


# -- hand-off: each step's output is the next step's input ------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("steps", "pipeline_input", "expected"),
    [
        pytest.param([Upper(), Reverse()], "abc", "CBA", id="plain-then-instrumented"),
        pytest.param([Reverse(), Exclaim()], "abc", "cba!", id="async-plain-step"),
        pytest.param([Recorder("echo"), Distance()], '{"x": -3, "y": 4}', "7", id="typed-step"),
        pytest.param([Reverse(), shout], "abc", "CBA", id="decorated-function"),
        pytest.param([Reverse(), slow_async], "ab", "<ba>", id="async-decorated-function"),
        pytest.param(
            [Upper(), ToolPipeline.of(Reverse(), Exclaim()), shout], "ab", "BA!", id="nested"
        ),
        pytest.param(
            [ToolPipeline.of(ToolPipeline.of(Upper()), Reverse())], "ab", "BA", id="deeply-nested"
        ),
    ],
)
async def test_each_output_is_the_next_input(
    steps: list[Any], pipeline_input: str, expected: str
) -> None:
    result = await ToolPipeline(steps).aexecute(pipeline_input)

    assert (result.is_success, result.output) == (True, expected)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("function", "step_input", "expected"),
    [
        pytest.param(shout, '{"a": 1}', '{"A": 1}', id="str-parameter-gets-the-text-as-is"),
        pytest.param(double, "21", "42", id="text-that-fits-the-parameter"),
        pytest.param(total, "[1, 2.5]", "3.5", id="json-value-as-the-parameter"),
        pytest.param(total, '{"prices": [1, 2]}', "3.0", id="json-arguments-object"),
        pytest.param(money, "3", "3.00 EUR", id="one-required-among-optional"),
        pytest.param(money, '{"amount": 2, "currency": "USD"}', "2.00 USD", id="optional-set"),
        pytest.param(join, '{"words": ["a", "b"], "sep": "-"}', "a-b", id="several-parameters"),
        pytest.param(today, "ignored", "2024-05-01", id="no-parameter"),
        pytest.param(
            double,
            "twenty",
            "Error: Invalid arguments for 'double': n: Input should be a valid "
            "integer, unable to parse string as an integer",
            id="bad-text-names-the-parameter",
        ),
        pytest.param(
            total,
            '{"numbers": [1]}',
            "Error: Invalid arguments for 'total': prices: Input should be a valid list",
            id="object-that-fits-nothing",
        ),
        pytest.param(
            total,
            "[" * 100_000 + "]" * 100_000,
            "Error: Invalid arguments for 'total': prices: Input should be a valid list",
            id="json-nested-too-deeply-is-passed-as-text",
        ),
        pytest.param(
            join,
            "a b",
            "Error: Invalid arguments for 'join': not valid JSON (Expecting value "
            "at line 1 column 1). Send the arguments as a JSON object.",
            id="several-need-json",
        ),
    ],
)
async def test_how_text_becomes_a_decorated_functions_arguments(
    function: Any, step_input: str, expected: str
) -> None:
    result = await ToolPipeline([Recorder("echo"), function]).aexecute(step_input)

    assert (result.output if result.is_success else f"Error: {result.error_message}") == expected


@pytest.mark.anyio
async def test_bound_method_step_and_the_last_steps_structured_output() -> None:
    notebook = Notebook()

    stored = await ToolPipeline.of(Upper(), notebook.write_note).aexecute("buy milk")
    point = await ToolPipeline.of(Reverse(), to_point).aexecute("4,3")

    assert stored.output == "stored 1"
    assert notebook.notes == ["BUY MILK"]
    assert point == ToolResult.success('{"x": 3, "y": 4}', structured_output={"x": 3, "y": 4})


def test_sync_execute_runs_the_same_pipeline() -> None:
    pipeline = ToolPipeline.of(Upper(), Reverse(), slow_async)

    assert pipeline.execute("ab").output == "<BA>"


# -- error strategies -------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("strategy", "middle", "expected", "last_step_saw"),
    [
        pytest.param(
            FAIL_FAST, Fails(), ToolResult.failure("cannot handle 'x'"), None, id="fail-fast"
        ),
        pytest.param(
            FAIL_FAST,
            Raises(),
            ToolResult.failure("ValueError: the disk is full"),
            None,
            id="fail-fast-raise",
        ),
        pytest.param(
            FAIL_FAST,
            Distance(),
            ToolResult.failure(
                "Invalid arguments for 'distance': not valid JSON (Expecting value at line 1 "
                "column 1). Send the arguments as a JSON object."
            ),
            None,
            id="fail-fast-typed-parse-failure",
        ),
        pytest.param(
            CONTINUE,
            Fails(),
            ToolResult.success("cannot handle 'x'"),
            "cannot handle 'x'",
            id="continue-passes-the-error-message",
        ),
        pytest.param(
            CONTINUE,
            Raises(),
            ToolResult.success("ValueError: the disk is full"),
            "ValueError: the disk is full",
            id="continue-passes-the-exception-message",
        ),
        pytest.param(
            CONTINUE, FailsSilently(), ToolResult.success(""), "", id="continue-no-message"
        ),
        pytest.param(CONTINUE, Reverse(), ToolResult.success("x"), "x", id="no-failure"),
    ],
)
async def test_error_strategies(
    strategy: PipelineErrorStrategy,
    middle: AgentTool,
    expected: ToolResult,
    last_step_saw: str | None,
) -> None:
    first, last = Recorder("first"), Recorder("last")
    pipeline = ToolPipeline([first, middle, last], error_strategy=strategy)

    result = await pipeline.aexecute("x")

    assert result == expected
    assert first.inputs == ["x"]
    assert last.inputs == ([] if last_step_saw is None else [last_step_saw])


@pytest.mark.anyio
@pytest.mark.parametrize("strategy", [FAIL_FAST, CONTINUE])
async def test_a_failing_last_step_is_the_result_under_both_strategies(
    strategy: PipelineErrorStrategy,
) -> None:
    pipeline = ToolPipeline([Reverse(), Fails()], error_strategy=strategy)

    assert await pipeline.aexecute("ab") == ToolResult.failure("cannot handle 'ba'")


@pytest.mark.anyio
async def test_a_failure_inside_a_nested_pipeline_is_a_failure_of_the_outer_step() -> None:
    inner = ToolPipeline([Fails(), Recorder("inner_last")], name="inner")
    after = Recorder("after")

    fail_fast = await ToolPipeline([inner, after]).aexecute("x")
    carry_on = await ToolPipeline([inner, after], error_strategy=CONTINUE).aexecute("x")

    assert fail_fast == ToolResult.failure("cannot handle 'x'")
    assert carry_on == ToolResult.success("cannot handle 'x'")
    assert after.inputs == ["cannot handle 'x'"]


@pytest.mark.anyio
async def test_errors_that_stop_the_run_are_not_swallowed_by_any_strategy() -> None:
    class Stops(AbstractAgentTool):
        name = "stops"
        description = "Stops the run"

        def do_execute(self, input: str) -> str:
            raise ExitEarlyError("stop everything")

    for strategy in PipelineErrorStrategy:
        with pytest.raises(ExitEarlyError, match="stop everything"):
            await ToolPipeline([Upper(), Stops()], error_strategy=strategy).aexecute("x")


# -- adapters ---------------------------------------------------------------------------------


class Calls:
    """An adapter that records the results it was given."""

    def __init__(self, reshape: Any = None) -> None:
        self.seen: list[ToolResult] = []
        self.reshape = reshape or (lambda result: f"adapted({result.output})")

    def __call__(self, result: ToolResult) -> str:
        self.seen.append(result)
        return str(self.reshape(result))


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("build", "strategy", "expected", "adapter_saw"),
    [
        pytest.param(
            lambda a: [PipelineStep(Upper(), a), Recorder("next")],
            FAIL_FAST,
            "adapted(X)",
            ["X"],
            id="called-after-a-successful-step",
        ),
        pytest.param(
            lambda a: [Upper(), PipelineStep(Reverse(), a)],
            FAIL_FAST,
            "X",
            [],
            id="never-called-on-the-last-step",
        ),
        pytest.param(
            lambda a: [PipelineStep(Fails(), a), Recorder("next")],
            CONTINUE,
            "cannot handle 'x'",
            [],
            id="never-called-on-a-failed-step",
        ),
        pytest.param(
            lambda a: [PipelineStep(Fails(), a), Recorder("next")],
            FAIL_FAST,
            None,
            [],
            id="not-called-when-the-pipeline-stops",
        ),
        pytest.param(
            lambda a: [
                PipelineStep(ToolPipeline.of(Upper(), Reverse()), a),
                Recorder("next"),
            ],
            FAIL_FAST,
            "adapted(X)",
            ["X"],
            id="after-a-nested-pipeline",
        ),
    ],
)
async def test_when_adapters_run(
    build: Any, strategy: PipelineErrorStrategy, expected: str | None, adapter_saw: list[str]
) -> None:
    adapter = Calls()

    result = await ToolPipeline(build(adapter), error_strategy=strategy).aexecute("x")

    assert result.output == (expected or "")
    assert result.is_success is (expected is not None)
    assert [seen.output for seen in adapter.seen] == adapter_saw


@pytest.mark.anyio
async def test_an_adapter_sees_the_whole_result_structured_output_included() -> None:
    def mirror(result: ToolResult) -> str:
        point = result.structured_output  # the dict to_point returned, not just its JSON text
        return json.dumps({"x": point["x"] * 10, "y": point["y"]})

    pipeline = ToolPipeline([PipelineStep(to_point, adapter=mirror), Distance()])

    assert (await pipeline.aexecute("3,-4")).output == "34"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("adapter", "message"),
    [
        pytest.param(
            lambda r: r.structured_output["missing"],
            "Pipeline 'p': the adapter after step 1 ('reverse') raised TypeError: "
            "'NoneType' object is not subscriptable",
            id="raises",
        ),
        pytest.param(
            lambda r: 42,
            "Pipeline 'p': the adapter after step 1 ('reverse') returned int, expected str",
            id="returns-no-str",
        ),
    ],
)
@pytest.mark.parametrize("strategy", [FAIL_FAST, CONTINUE])
async def test_a_broken_adapter_fails_the_pipeline_with_a_clear_message(
    adapter: Any, message: str, strategy: PipelineErrorStrategy, tool_context: ToolContext
) -> None:
    after = Recorder("after")
    pipeline = ToolPipeline(
        [PipelineStep(Reverse(), adapter), after], name="p", error_strategy=strategy
    )

    assert await pipeline.aexecute("ab") == ToolResult.failure(message)
    assert after.inputs == []
    assert tool_context.metrics["p"].errors == 1  # a bug, not a tool saying no


@pytest.mark.anyio
async def test_an_adapter_may_stop_the_run() -> None:
    def refuse(result: ToolResult) -> str:
        raise ExitEarlyError("the adapter says stop")

    with pytest.raises(ExitEarlyError):
        await ToolPipeline([PipelineStep(Upper(), refuse), Reverse()]).aexecute("x")


# -- construction -----------------------------------------------------------------------------


def test_default_name_and_description_come_from_the_steps() -> None:
    pipeline = ToolPipeline.of(Upper(), PipelineStep(shout), ToolPipeline.of(Reverse()))

    assert pipeline.name == "upper_then_shout_then_reverse"
    assert pipeline.description == "Pipeline: upper -> shout -> reverse"
    assert pipeline.error_strategy is FAIL_FAST
    assert pipeline.return_behavior is ReturnBehavior.TO_LLM
    assert pipeline.steps[1] == PipelineStep(shout)
    assert [t.name for t in pipeline.step_tools] == ["upper", "shout", "reverse"]
    assert repr(pipeline) == (
        "ToolPipeline(name='upper_then_shout_then_reverse', steps=['upper', 'shout', 'reverse'])"
    )


def test_full_constructor() -> None:
    pipeline = ToolPipeline(
        steps=[Upper(), Reverse()],
        name="shout_backwards",
        description="Upper-cases, then reverses.",
        error_strategy="continue_on_failure",
        return_behavior=ReturnBehavior.IMMEDIATE,
    )

    assert (pipeline.name, pipeline.description) == (
        "shout_backwards",
        "Upper-cases, then reverses.",
    )
    assert pipeline.error_strategy is CONTINUE
    assert pipeline.return_behavior is ReturnBehavior.IMMEDIATE


class Nameless(AbstractAgentTool):
    description = "Has no name"

    def do_execute(self, input: str) -> str:
        return input


class Bodiless(AbstractAgentTool):
    name = "bodiless"
    description = "Implements nothing"


class Plain:
    def method(self) -> None: ...


@tool
def unbound_method(self: Any, text: str) -> str:
    """A method decorated outside a class body, passed without an object."""
    return text


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        pytest.param(lambda: ToolPipeline([]), ConfigurationError, "at least one step", id="empty"),
        pytest.param(lambda: ToolPipeline.of(), ConfigurationError, "at least one", id="empty-of"),
        pytest.param(
            lambda: ToolPipeline("upper"), ConfigurationError, "must be a list", id="str-steps"
        ),
        pytest.param(
            lambda: ToolPipeline([Upper(), 42]),
            ConfigurationError,
            "step 2 is an object of type 'int', not a tool",
            id="not-a-tool",
        ),
        pytest.param(
            lambda: ToolPipeline([Plain().method]),
            ConfigurationError,
            "step 1 is an object of type 'method', not a tool",
            id="undecorated-function",
        ),
        pytest.param(
            lambda: ToolPipeline([Upper, Reverse()]),
            ConfigurationError,
            "step 1 is the class 'Upper', not an instance: pass Upper(...)",
            id="class",
        ),
        pytest.param(
            lambda: ToolPipeline([Notebook()]),
            ConfigurationError,
            "step 1 is an object of type 'Notebook'",
            id="object-with-tool-methods",
        ),
        pytest.param(
            lambda: ToolPipeline([unbound_method]),
            ConfigurationError,
            "step 1: 'unbound_method' is a method; pass the bound method",
            id="unbound-method",
        ),
        pytest.param(
            lambda: ToolPipeline([Upper(), Nameless()]),
            ToolNameError,
            "step 2 (Nameless): Tool name must be a non-empty string, got None",
            id="step-without-name",
        ),
        pytest.param(
            lambda: ToolPipeline([Bodiless()]),
            ConfigurationError,
            "step 1 ('bodiless', Bodiless) implements no body",
            id="step-without-body",
        ),
        pytest.param(
            lambda: ToolPipeline([Upper()], name="shout it"),
            ToolNameError,
            "must match ^[A-Za-z0-9_]+$",
            id="bad-name",
        ),
        pytest.param(
            lambda: ToolPipeline([Upper()], name="x" * 65),
            ToolNameError,
            "65 characters long; at most 64",
            id="long-name",
        ),
        pytest.param(
            lambda: ToolPipeline([Recorder("a_rather_long_step_name")] * 3),
            ToolNameError,
            "the default name made from the step names is invalid",
            id="long-default-name",
        ),
        pytest.param(
            lambda: ToolPipeline([Upper()], error_strategy="retry"),
            ConfigurationError,
            "'retry' is not a valid PipelineErrorStrategy",
            id="bad-strategy",
        ),
        pytest.param(
            lambda: PipelineStep(Upper(), adapter="upper"),  # type: ignore[arg-type]
            ConfigurationError,
            "adapter must be a callable",
            id="adapter-not-callable",
        ),
    ],
)
def test_construction_errors_name_what_was_wrong(
    make: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        make()


def test_a_long_default_name_is_fine_with_a_name_given() -> None:
    steps = [Recorder("a_rather_long_step_name")] * 3

    assert ToolPipeline(steps, name="triple").name == "triple"


def test_a_pipeline_resolves_like_any_tool_with_one_string_parameter() -> None:
    resolved = ToolResolver().resolve([ToolPipeline.of(Upper(), Reverse())])

    (spec,) = resolved.specs
    assert spec["function"] == {
        "name": "upper_then_reverse",
        "description": "Pipeline: upper -> reverse",
        "parameters": {
            "type": "object",
            "properties": {
                "input": {"type": "string", "description": "The input to pass to the tool"}
            },
            "required": ["input"],
        },
    }


# -- approval and context propagation ---------------------------------------------------------


class DeleteFile(AbstractAgentTool):
    """Every call must be approved; records what it actually ran on."""

    name = "delete_file"
    description = "Delete a file"
    requires_approval = True

    def __init__(self) -> None:
        self.deleted: list[str] = []

    def do_execute(self, input: str) -> str:
        self.deleted.append(input)
        return f"deleted {input}"


@tool(requires_approval=lambda arguments: "etc" in arguments)
def remove(path: str) -> str:
    """Asks only for paths under /etc."""
    return f"removed {path}"


def gated_pipeline(delete: DeleteFile) -> ToolPipeline:
    """upper -> (reverse -> delete_file) -> exclaim: the gated step sits in a nested pipeline."""
    inner = ToolPipeline([Reverse(), delete], name="reverse_and_delete")
    return ToolPipeline([Upper(), inner, Exclaim()], name="cleanup")


def test_a_gated_step_at_any_depth_makes_the_pipeline_report_approval() -> None:
    delete = DeleteFile()
    pipeline = gated_pipeline(delete)

    assert pipeline.requires_approval is True
    assert pipeline.approval_steps == ["reverse_and_delete"]
    assert ToolPipeline.of(Upper(), remove).approval_steps == ["remove"]  # a callable rule
    assert ToolPipeline.of(Upper(), Reverse()).requires_approval is False
    assert ToolResolver().resolve([pipeline]).approval_required
    assert not pipeline.needs_approval("anything")  # the step asks, not the pipeline


@pytest.mark.parametrize(
    ("decision", "deleted", "final"),
    [
        pytest.param(Continue(), ["TOF.A"], "deleted TOF.A!", id="continue"),
        pytest.param(Edit(revised_output="B.TXT"), ["B.TXT"], "deleted B.TXT!", id="edit"),
        pytest.param(
            ExitEarly(reason="keep it"), [], "Error: Rejected by reviewer: keep it", id="exit"
        ),
    ],
)
def test_a_nested_gated_step_asks_the_ensembles_reviewer(
    decision: Any, deleted: list[str], final: str
) -> None:
    delete = DeleteFile()
    handler = ScriptedReviewHandler([decision])
    model = ScriptedChatModel([tool_call("cleanup", {"input": "a.fot"}), text("done")])
    agent = Agent(role="Janitor", goal="Clean up", tools=[gated_pipeline(delete)], llm=model)

    output = Ensemble(
        tasks=[Task(description="Remove a.fot", agent=agent)], review_handler=handler
    ).run()

    (request,) = handler.requests
    assert (request.tool_name, request.output) == ("delete_file", "TOF.A")
    assert request.timing is ReviewTiming.DURING_EXECUTION
    assert request.task_description == "Remove a.fot"
    assert delete.deleted == deleted
    assert model.requests[1].tool_results == [final]
    assert output.raw == "done"


def test_a_nested_gated_step_without_a_handler_fails_before_the_first_model_call() -> None:
    model = ScriptedChatModel([tool_call("cleanup", {"input": "a"}), text("done")])
    agent = Agent(role="Janitor", goal="Clean up", tools=[gated_pipeline(DeleteFile())], llm=model)

    with pytest.raises(ConfigurationError, match="cleanup require approval"):
        Ensemble(tasks=[Task(description="Remove a", agent=agent)]).run()
    assert model.requests == []


@pytest.mark.anyio
async def test_a_conditional_rule_on_a_decorated_step_asks_only_when_it_says_so() -> None:
    handler = ScriptedReviewHandler([ExitEarly(reason="not /etc")])
    pipeline = ToolPipeline.of(Reverse(), remove)

    with use_tool_context(ToolContext(review_handler=handler)):
        harmless = await pipeline.aexecute("pmt/")
        dangerous = await pipeline.aexecute("cte/")

    assert harmless.output == "removed /tmp"
    assert dangerous == ToolResult.failure("Rejected by reviewer: not /etc")
    (request,) = handler.requests
    assert request.output == '{"path": "/etc"}'  # a decorated step shows its JSON arguments


@pytest.mark.anyio
async def test_a_pipeline_gated_itself_asks_once_about_its_whole_input() -> None:
    handler = ScriptedReviewHandler([Edit(revised_output="edited")])
    pipeline = ToolPipeline.of(Upper(), Reverse())
    pipeline.requires_approval = True

    with use_tool_context(ToolContext(review_handler=handler)):
        result = await pipeline.aexecute("original")

    assert result.output == "DETIDE"
    assert [(r.tool_name, r.output) for r in handler.requests] == [
        ("upper_then_reverse", "original")
    ]


@pytest.mark.anyio
async def test_every_step_sees_the_callers_context_in_threads_and_nested_pipelines() -> None:
    seen: list[tuple[str, ToolContext, bool]] = []
    loop_thread = threading.get_ident()

    class Probe(AbstractAgentTool):
        description = "Records the context and thread it ran in"

        def __init__(self, name: str) -> None:
            self.name = name

        def do_execute(self, input: str) -> str:
            seen.append((self.name, current_tool_context(), threading.get_ident() == loop_thread))
            return input

    class AsyncProbe(Probe):
        async def ado_execute(self, input: str) -> str:
            seen.append((self.name, current_tool_context(), threading.get_ident() == loop_thread))
            return input

    context = ToolContext(task_description="probe", agent_role="Tester")
    pipeline = ToolPipeline.of(Probe("sync"), ToolPipeline.of(AsyncProbe("nested_async")))

    with use_tool_context(context) as active:
        await pipeline.aexecute("x")

    assert [(name, ctx is active, on_loop) for name, ctx, on_loop in seen] == [
        ("sync", True, False),  # a sync body runs in a worker thread
        ("nested_async", True, True),  # an async body runs on the event loop itself
    ]


@pytest.mark.anyio
async def test_a_slow_sync_step_does_not_block_the_event_loop() -> None:
    # The step waits for the loop to act; had it blocked the loop, it would wait in vain.
    loop_ran = threading.Event()

    class WaitsForTheLoop(AbstractAgentTool):
        name = "waits"
        description = "Blocks until the event loop has run something else"

        def do_execute(self, input: str) -> str:
            return input if loop_ran.wait(30) else "the loop was blocked"

    async def nudge() -> None:
        await asyncio.sleep(0.01)
        loop_ran.set()

    result, _ = await asyncio.gather(
        ToolPipeline.of(Upper(), WaitsForTheLoop()).aexecute("x"), nudge()
    )
    assert result.output == "X"


# -- metrics and logs -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_metrics_for_the_pipeline_and_every_step(tool_context: ToolContext) -> None:
    nested = ToolPipeline.of(Reverse(), Fails())
    pipeline = ToolPipeline([Upper(), shout, nested, Exclaim()], name="p", error_strategy=CONTINUE)

    await pipeline.aexecute("a")
    await pipeline.aexecute("b")

    counts = {
        name: (m.calls, m.successes, m.failures)
        for name, m in tool_context.metrics.snapshot().items()
    }
    assert counts == {
        "p": (2, 2, 0),
        "upper": (2, 2, 0),  # a plain AgentTool: counted by the pipeline
        "shout": (2, 2, 0),
        "reverse_then_fails": (2, 0, 2),
        "reverse": (2, 2, 0),
        "fails": (2, 0, 2),
        "exclaim": (2, 2, 0),
    }
    assert (pipeline.metrics.calls, nested.metrics.failures) == (2, 2)


@pytest.mark.anyio
async def test_every_step_and_the_pipeline_are_logged(tool_logs: pytest.LogCaptureFixture) -> None:
    await ToolPipeline([Upper(), Reverse()], name="p").aexecute("ab")

    infos = [r.getMessage() for r in tool_logs.records if r.levelname == "INFO"]
    assert infos == ["upper(ab) -> AB", "reverse(AB) -> BA", "p(ab) -> BA"]


# -- in a run: one tool call, the final output only, return behaviour -------------------------


def test_the_model_calls_the_pipeline_once_and_sees_only_the_final_output() -> None:
    model = ScriptedChatModel([tool_call("upper_then_reverse", {"input": "abc"}), text("CBA")])
    agent = Agent(role="Worker", goal="g", tools=[ToolPipeline.of(Upper(), Reverse())], llm=model)

    output = Ensemble(tasks=[Task(description="d", agent=agent)]).run().task_outputs[0]

    assert len(model.requests) == 2
    assert model.requests[1].tool_results == ["CBA"]
    assert "ABC" not in json.dumps(model.requests[1].messages)  # the middle step stays inside
    assert [(r.name, r.output) for r in output.tool_calls] == [("upper_then_reverse", "CBA")]


@pytest.mark.parametrize(
    ("behavior", "fails", "llm_calls", "raw", "immediate"),
    [
        pytest.param(ReturnBehavior.IMMEDIATE, False, 1, "CBA", True, id="immediate-ends-task"),
        pytest.param(ReturnBehavior.IMMEDIATE_IF_LAST, False, 1, "CBA", True, id="if-last"),
        pytest.param(ReturnBehavior.TO_LLM, False, 2, "done", False, id="to-llm"),
        pytest.param(ReturnBehavior.IMMEDIATE, True, 2, "done", False, id="failure-reprocess"),
    ],
)
def test_return_behavior_works_like_any_tools(
    behavior: ReturnBehavior, fails: bool, llm_calls: int, raw: str, immediate: bool
) -> None:
    steps: list[AgentTool] = [Upper(), Reverse(), *([Fails()] if fails else [])]
    pipeline = ToolPipeline(steps, name="p")
    pipeline.return_behavior = behavior
    model = ScriptedChatModel([tool_call("p", {"input": "abc"}), text("done")])
    agent = Agent(role="Worker", goal="g", tools=[pipeline], llm=model)

    output = Ensemble(tasks=[Task(description="d", agent=agent)]).run().task_outputs[0]

    assert (output.llm_calls, output.raw, output.returned_immediately) == (
        llm_calls,
        raw,
        immediate,
    )
