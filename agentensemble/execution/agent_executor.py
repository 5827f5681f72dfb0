"""One agent on one task: the model/tool loop on native function calling."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import field
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from agentensemble._dataclass import dataclass
from agentensemble.errors import (
    AgentEnsembleError,
    AgentExecutionError,
    MaxIterationsExceededError,
    OutputParsingError,
)
from agentensemble.events import (
    EventEmitter,
    LLMCallCompleted,
    LLMCallFailed,
    LLMCallStarted,
    ToolCallCompleted,
    ToolCallStarted,
)
from agentensemble.execution._recall import show_recollection
from agentensemble.execution._turn import in_scope, run_alone, run_in_order, run_turn
from agentensemble.execution._verbose import Transcript
from agentensemble.execution.guardrails import (
    check_input,
    first_failure,
    guardrail_feedback,
    output_violation,
)
from agentensemble.execution.prompts import ContextItem, build_system_prompt, build_user_prompt
from agentensemble.execution.structured import (
    DEFAULT_OUTPUT_RETRIES,
    correction_message,
    output_instructions,
    parse_output,
    response_format,
)
from agentensemble.guardrails import GuardrailInput
from agentensemble.llm.cost import add_costs, cost_usd
from agentensemble.llm.response_format import ResponseFormat, supports_response_format
from agentensemble.llm.types import (
    ChatModel,
    ChatResponse,
    Message,
    ToolCall,
    assistant_message,
    model_label,
)
from agentensemble.logging import get_logger
from agentensemble.outputs import ReturnBehavior, TaskOutput, ToolCallRecord, no_usage
from agentensemble.redaction import redact_text
from agentensemble.run_context import model_call_scope, new_id_hex
from agentensemble.steps import as_step, branches, checkpointing, replaced_output
from agentensemble.task_memory import TaskMemory
from agentensemble.tools._gate import ToolCallResult
from agentensemble.tools.base import ToolResult
from agentensemble.tools.context import ToolContext, in_tool_call, use_tool_context
from agentensemble.tools.decorator import FunctionTool
from agentensemble.tools.metrics import ToolMetricsRegistry
from agentensemble.tools.return_rule import should_return_immediately

if TYPE_CHECKING:
    from agentensemble.tools.resolver import ResolvedTools

MAX_STOPS = 3
STOP_MESSAGE = (
    "STOP: the tool-call limit for this task ({limit}) is reached; this call was not executed. "
    "Do not call any more tools. Give your final answer now."
)
EMPTY_ANSWER_NUDGE = "Your reply was empty. Give your final answer to the task now."
_log = get_logger()


@dataclass
class AgentTask:
    """Everything the executor needs, already filled from templates and resolved."""

    role: str
    goal: str
    description: str
    expected_output: str
    model: ChatModel
    background: str | None = None
    response_format: str | None = None
    max_iterations: int = 25
    tools: ResolvedTools | None = None
    context: Sequence[ContextItem] = ()
    output_type: Any = None  # any type pydantic validates; see execution/structured.py
    task_name: str | None = None
    verbose: bool = False
    max_output_retries: int = DEFAULT_OUTPUT_RETRIES
    input_guardrails: Sequence[Any] = ()
    output_guardrails: Sequence[Any] = ()
    inputs: Mapping[str, Any] = field(default_factory=dict)
    memory: TaskMemory | None = None  # memory, knowledge, session: shown before the task

    def for_run(self, description: str, context: Sequence[ContextItem]) -> AgentTask:
        """A copy for one run of the task, with its (reviewed) description and its context: a
        shallow copy like ``dataclasses.replace``, without running ``__init__`` again (a third
        of the cost, on every task run; the class has no ``__post_init__`` to skip)."""
        run = object.__new__(AgentTask)
        run.__dict__.update(self.__dict__, description=description, context=context)
        return run


@dataclass
class ExecutionEnv:
    """Run-wide services handed to every executor: events, review handler, tool metrics."""

    emitter: EventEmitter = field(default_factory=EventEmitter)
    review_handler: Any = None
    metrics: ToolMetricsRegistry = field(default_factory=ToolMetricsRegistry)


@dataclass(slots=True)
class _CallOutcome:
    call: ToolCall
    result: ToolResult
    behavior: ReturnBehavior
    duration: float
    executed: bool
    ran_with: str | None = None


class AgentExecutor:
    """Runs the loop: ask the model, run the tools it calls, feed results back, until an answer."""

    def __init__(
        self, task: AgentTask, env: ExecutionEnv | None = None, *, started: float | None = None
    ) -> None:
        """``started``: the ``perf_counter`` time the task's ``duration`` counts from (a task
        step's own start, before its context was gathered); by default, when ``run`` starts."""
        self.task = task
        self._started = started
        self.env = env or ExecutionEnv()
        # the emitter when it has listeners, read once (its listeners are fixed when it is
        # made): each check was a Python ``__bool__`` call, seven a 1-tool run
        self._emitter = self.env.emitter if self.env.emitter else None
        self.messages: list[Message] = [
            {
                "role": "system",
                "content": build_system_prompt(
                    task.role, task.goal, task.background, task.response_format
                ),
            },
            {"role": "user", "content": self._user_prompt(schema_in_prompt=True)},
        ]
        self._prompt_at = 1  # the task's own user message (after any session history)
        self._format: ResponseFormat | None = None
        self.records: list[ToolCallRecord] = []
        self.llm_calls = 0
        self.usage = no_usage()
        self._tool_calls_made = 0
        self._stops = 0
        self._transcript = Transcript(task.role) if task.verbose else None
        self._costs: list[float | None] = []

    def _user_prompt(self, *, schema_in_prompt: bool) -> str:
        task = self.task
        wants_schema = schema_in_prompt and task.output_type is not None
        return build_user_prompt(
            task.description,
            task.expected_output,
            task.context,
            output_instructions(task.output_type) if wants_schema else None,
        )

    async def _prepare(self) -> None:
        """Input guardrails first (no model call if one fails), then the output schema's route:
        the model's native ``response_format`` when it says it honours one, else the prompt."""
        task = self.task
        if task.input_guardrails:
            seen = GuardrailInput(
                description=task.description,
                expected_output=task.expected_output,
                agent_role=task.role,
                inputs=dict(task.inputs),
                context=tuple(item.output for item in task.context),
            )
            await check_input(task.input_guardrails, seen, self.env.emitter)
        if task.memory is not None:
            recalled = await task.memory.recall(task.description)
            self._prompt_at = show_recollection(self.messages, recalled, task, self.env.emitter)
        if task.output_type is not None and await supports_response_format(task.model):
            self._format = response_format(task.output_type)
            self.messages[self._prompt_at]["content"] = self._user_prompt(schema_in_prompt=False)

    async def _finish(
        self, text: str, started: float, attempt: int
    ) -> TaskOutput | tuple[AgentEnsembleError, str]:
        """The task's output, or the error and the feedback that asks the agent to correct it."""
        parsed = None
        if self.task.output_type is not None:
            try:
                parsed = parse_output(text, self.task.output_type)
            except OutputParsingError as error:
                return error, correction_message(error)
        output = self._output(text, started, parsed=parsed)
        failed = await self._check_output(output, attempt)
        if failed is None:
            return output
        name, message = failed
        return output_violation(name, message, attempt), guardrail_feedback(name, message)

    async def _check_output(self, output: TaskOutput, attempt: int) -> tuple[str, str] | None:
        return await first_failure(
            self.task.output_guardrails,
            output,
            kind="output",
            emitter=self.env.emitter,
            task_description=self.task.description,
            agent_role=self.task.role,
            attempt=attempt,
        )

    async def run(self) -> TaskOutput:
        """Run to completion and return the task's output (replaced by a durable fork's edited
        output when this is the task before the fork point: ``steps.replaced_output``)."""
        output = await self._run()
        edited = None if in_tool_call() else replaced_output()
        if edited is None:
            return output
        parsed = None
        if self.task.output_type is not None:
            try:
                parsed = parse_output(edited, self.task.output_type)
            except OutputParsingError as error:
                _log.warning("edited output does not parse into output_type", error=str(error))
        return output.model_copy(update={"raw": edited, "parsed": parsed})

    async def _run(self) -> TaskOutput:
        started = self._started if self._started is not None else time.perf_counter()
        await self._prepare()
        specs = self.task.tools.specs if self.task.tools is not None else None  # [] for none
        corrections = 0
        nudged = False
        while True:
            response = await self._ask_model(specs)
            if response.tool_calls:
                immediate = await self._run_tool_calls(response.tool_calls)
                if immediate is not None:
                    output = self._output(immediate, started, returned_immediately=True)
                    failed = await self._check_output(output, 1)
                    if failed is not None:  # no model turn to correct a tool's direct answer
                        raise output_violation(*failed, attempts=1)
                    return output
                continue
            text = response.content or ""
            if not text.strip():
                if nudged:
                    raise AgentExecutionError(
                        f"Agent '{self.task.role}' returned an empty answer twice"
                    )
                nudged = True
                self.messages.append({"role": "assistant", "content": text})
                self.messages.append({"role": "user", "content": EMPTY_ANSWER_NUDGE})
                continue
            finished = await self._finish(text, started, attempt=corrections + 1)
            if isinstance(finished, TaskOutput):
                return finished
            error, feedback = finished
            if corrections >= self.task.max_output_retries:
                raise error
            corrections += 1
            self.messages.append({"role": "assistant", "content": text})
            self.messages.append({"role": "user", "content": feedback})

    async def _ask_model(self, specs: list[dict[str, Any]] | None) -> ChatResponse:
        if self._transcript is not None:
            self._transcript.messages(self.messages)
        role, name, emitter = self.task.role, self.task.task_name, self._emitter
        label, call_id = model_label(self.task.model), new_id_hex()
        if emitter is not None:
            emitter.emit(LLMCallStarted(role, label, call_id, name, list(self.messages)))
        started = time.perf_counter()
        complete: Any = self.task.model.complete  # a model that said it takes the format
        options: dict[str, Any] = {}
        if self._format is not None:
            options["response_format"] = self._format
        try:
            with model_call_scope(role, name, call_id):
                if checkpointing():  # a durable run: the turn is a step of it
                    response: ChatResponse = await as_step(
                        "model",
                        f"model:{role}",
                        lambda: complete(self.messages, tools=specs or None, **options),
                    )
                else:  # what as_step does with no step runner, without its frame and lambda
                    response = await complete(self.messages, tools=specs or None, **options)
        except Exception as error:
            if emitter is not None:
                failed_after = timedelta(seconds=time.perf_counter() - started)
                emitter.emit(LLMCallFailed(role, label, call_id, failed_after, error, name))
            raise
        duration = time.perf_counter() - started
        if self._transcript is not None:
            self._transcript.answer(response)
        self.llm_calls += 1
        self.usage = self.usage + response.usage
        cost = cost_usd(response.usage, label, response.model)
        self._costs.append(cost)
        if emitter is not None:
            emitter.emit(
                LLMCallCompleted(
                    agent_role=role,
                    model=label,
                    duration=timedelta(seconds=duration),
                    usage=response.usage,
                    tool_calls=len(response.tool_calls),
                    task_name=name,
                    call_id=call_id,
                    response=response,
                    attempts=response.attempts,
                    cost_usd=cost,
                )
            )
        return response

    async def _run_tool_calls(self, calls: Sequence[ToolCall]) -> str | None:
        """Run one response's calls concurrently; the joined outputs if the task ends now.

        The assistant's tool-call message and every result are appended together, after the calls
        finish, so a cancelled turn never leaves a call without its result in the history.
        """
        limit = self.task.max_iterations
        allowed = max(0, min(len(calls), limit - self._tool_calls_made))
        self._tool_calls_made += allowed
        context = ToolContext(
            review_handler=self.env.review_handler,
            metrics=self.env.metrics,
            emit=self._emitter.emit if self._emitter is not None else None,
            task_description=self.task.description,
            agent_role=self.task.role,
            loop=asyncio.get_running_loop(),  # set here: use_tool_context need not copy it
        )
        with use_tool_context(context):
            durable = checkpointing()
            own = durable and any(self._checkpoints_itself(c.name) for c in calls)
            scopes = branches(allowed) if own and allowed > 1 else None
            if scopes is not None:
                # calls making steps of their own (a delegation, an approval waiting in the
                # run) run at once, each numbering its steps in a scope of its own
                executed = await run_turn(
                    [
                        in_scope(scope, partial(self._run_one, call))
                        for scope, call in zip(scopes, calls[:allowed], strict=True)
                    ],
                    context.stopped,
                )
            elif own:  # a runner that cannot number them apart: one after another
                executed = await run_in_order(
                    [partial(self._run_one, call) for call in calls[:allowed]], context.stopped
                )
            elif allowed == 1 and not durable and self._all_ours_on_the_loop(calls[0].name):
                executed = [await run_alone(self._run_one(calls[0]), context.stopped)]
            else:
                executed = await run_turn(
                    [self._run_one(call) for call in calls[:allowed]], context.stopped
                )
        stopped = [
            _CallOutcome(
                call,
                ToolResult.failure(STOP_MESSAGE.format(limit=limit)),
                self._behavior(call.name),
                0.0,
                executed=False,
            )
            for call in calls[allowed:]
        ]
        outcomes = [*executed, *stopped]
        self.messages.append(assistant_message(None, calls))
        for outcome in outcomes:
            self._record(outcome)
        if stopped:
            self._stops += 1
            if self._stops >= MAX_STOPS:
                raise MaxIterationsExceededError(
                    f"Agent '{self.task.role}' kept calling tools after the limit of {limit} "
                    f"tool calls and {MAX_STOPS} stop instructions",
                    tool_calls=self.records,
                )
        any_failed = any(not o.result.is_success for o in outcomes)
        if should_return_immediately([o.behavior for o in outcomes], any_failed):
            return "\n\n".join(o.result.output for o in outcomes)
        return None

    def _checkpoints_itself(self, name: str) -> bool:
        """Whether the call's work is made of steps of its own, so a durable run checkpoints
        those one by one instead of the call as a whole: a delegation (the worker's model and
        tool calls), or a call whose approval waits in the run itself (a review handler such as
        DurableReviewHandler) before its body runs as a step."""
        tool = self.task.tools.get(name) if self.task.tools is not None else None
        if tool is None:
            return False
        if getattr(tool.tool, "durable_itself", False) is True:
            return True
        handler = self.env.review_handler
        return tool.requires_approval and getattr(handler, "durable_itself", False) is True

    def _all_ours_on_the_loop(self, name: str) -> bool:
        """Whether a call of tool ``name`` runs nothing but the framework's code on the event
        loop: an unknown tool, or a sync ``@tool`` function that can never ask for approval (its
        body runs in a worker thread). Such a call, alone in its turn, needs no task of its own
        (``run_alone``): no user code on the loop could set context variables the rest of the
        task would see, or swallow the turn's cancellation. (A durable run's steps keep a task
        each: its step runner's code runs on the loop.)"""
        tool = self.task.tools.get(name) if self.task.tools is not None else None
        if tool is None:
            return True
        body = tool.tool
        return (
            type(body) is FunctionTool
            and not body.definition.is_async
            and not body._may_need_approval()
        )

    def _behavior(self, name: str) -> ReturnBehavior:
        tool = self.task.tools.get(name) if self.task.tools is not None else None
        return tool.return_behavior if tool is not None else ReturnBehavior.TO_LLM

    async def _run_one(self, call: ToolCall) -> _CallOutcome:
        tool = self.task.tools.get(call.name) if self.task.tools is not None else None
        if self._emitter is not None:
            self._emitter.emit(
                ToolCallStarted(
                    self.task.role, self.task.description, call.id, call.name, call.arguments
                )
            )
        started = time.perf_counter()
        if tool is None:
            available = ", ".join(self.task.tools.names) if self.task.tools else "none"
            result = ToolResult.failure(f"Unknown tool '{call.name}'. Available tools: {available}")
            duration = time.perf_counter() - started
            return _CallOutcome(call, result, ReturnBehavior.TO_LLM, duration, True)
        if checkpointing():  # a durable run: the call is a step of it

            async def redacted_call() -> ToolCallResult:
                return _redacted_call(await tool.call(call.arguments))

            called = await as_step(
                "tool",
                f"tool:{call.name}",
                redacted_call,
                durable_itself=self._checkpoints_itself(call.name),
            )
        else:  # what as_step does with no step runner: the call itself, without a frame
            called = _redacted_call(await tool.call(call.arguments))
        duration = time.perf_counter() - started
        return _CallOutcome(
            call, called.result, tool.return_behavior, duration, True, called.ran_with
        )

    def _record(self, outcome: _CallOutcome) -> None:
        result = outcome.result
        content = result.output if result.is_success else f"Error: {result.error_message or ''}"
        if not outcome.executed:
            content = result.error_message or ""
        # the model's provider is outside the process: what a tool, a server's stderr or a
        # reviewer's rejection carries passes the redaction policy (and so do the record, the
        # events, the trace and durable records made from it)
        content = redact_text(content)
        self.messages.append({"role": "tool", "tool_call_id": outcome.call.id, "content": content})
        record = ToolCallRecord(
            name=outcome.call.name,
            arguments=outcome.ran_with or outcome.call.arguments,
            model_arguments=outcome.call.arguments if outcome.ran_with is not None else None,
            output=content,
            is_success=result.is_success,
            duration=timedelta(seconds=outcome.duration),
            return_behavior=outcome.behavior,
            structured_output=result.structured_output,
        )
        self.records.append(record)
        if self._emitter is not None:
            self._emitter.emit(
                ToolCallCompleted(
                    agent_role=self.task.role,
                    task_description=self.task.description,
                    record=record,
                    call_id=outcome.call.id,
                )
            )

    def _output(
        self, raw: str, started: float, *, parsed: Any = None, returned_immediately: bool = False
    ) -> TaskOutput:
        if returned_immediately and self.task.output_type is not None:
            try:
                parsed = parse_output(raw, self.task.output_type)
            except OutputParsingError as error:
                _log.warning(
                    "immediate tool output is not the task's output_type", error=str(error)
                )
        return TaskOutput(
            raw=raw,
            parsed=parsed,
            task_description=self.task.description,
            agent_role=self.task.role,
            duration=timedelta(seconds=time.perf_counter() - started),
            tool_calls=list(self.records),
            llm_calls=self.llm_calls,
            usage=self.usage,
            returned_immediately=returned_immediately,
            task_name=self.task.task_name,
            cost_usd=add_costs(self._costs),
        )


def _redacted_call(called: ToolCallResult) -> ToolCallResult:
    """What a durable run checkpoints (a record outside the process) and what an IMMEDIATE
    tool returns pass the redaction policy, as the model's text does."""
    shown = _redacted(called.result)
    if shown is called.result:  # nothing to redact: no copy
        return called
    return dataclasses.replace(called, result=shown)


def _redacted(result: ToolResult) -> ToolResult:
    """``result`` with its texts through the redaction policy (``structured_output`` is the
    tool's own value: it travels to records and listeners, never to the model)."""
    error = None if result.error_message is None else redact_text(result.error_message)
    output = redact_text(result.output)
    if output == result.output and error == result.error_message:
        return result
    return dataclasses.replace(result, output=output, error_message=error)


__all__ = ["AgentExecutor", "AgentTask", "ExecutionEnv"]
