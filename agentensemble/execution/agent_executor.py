"""One agent on one task: the model/tool loop on native function calling."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from agentensemble.errors import (
    AgentExecutionError,
    MaxIterationsExceededError,
    OutputParsingError,
)
from agentensemble.events import EventEmitter, LLMCallCompleted, ToolCallCompleted
from agentensemble.execution._turn import run_turn
from agentensemble.execution._verbose import Transcript
from agentensemble.execution.prompts import ContextItem, build_system_prompt, build_user_prompt
from agentensemble.execution.structured import (
    MAX_CORRECTIONS,
    correction_message,
    output_instructions,
    parse_output,
)
from agentensemble.llm.types import ChatModel, ChatResponse, Message, ToolCall, model_label
from agentensemble.logging import get_logger
from agentensemble.outputs import ReturnBehavior, TaskOutput, TokenUsage, ToolCallRecord
from agentensemble.tools.base import ToolResult
from agentensemble.tools.context import ToolContext, use_tool_context
from agentensemble.tools.metrics import ToolMetricsRegistry
from agentensemble.tools.return_rule import should_return_immediately

if TYPE_CHECKING:
    from pydantic import BaseModel

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
    output_type: type[BaseModel] | None = None
    task_name: str | None = None
    verbose: bool = False


@dataclass
class ExecutionEnv:
    """Run-wide services handed to every executor: events, review handler, tool metrics."""

    emitter: EventEmitter = field(default_factory=EventEmitter)
    review_handler: Any = None
    metrics: ToolMetricsRegistry = field(default_factory=ToolMetricsRegistry)


@dataclass
class _CallOutcome:
    call: ToolCall
    result: ToolResult
    behavior: ReturnBehavior
    duration: float
    executed: bool
    ran_with: str | None = None


class AgentExecutor:
    """Runs the loop: ask the model, run the tools it calls, feed results back, until an answer."""

    def __init__(self, task: AgentTask, env: ExecutionEnv | None = None) -> None:
        self.task = task
        self.env = env or ExecutionEnv()
        self.messages: list[Message] = [
            {
                "role": "system",
                "content": build_system_prompt(
                    task.role, task.goal, task.background, task.response_format
                ),
            },
            {
                "role": "user",
                "content": build_user_prompt(
                    task.description,
                    task.expected_output,
                    task.context,
                    output_instructions(task.output_type) if task.output_type else None,
                ),
            },
        ]
        self.records: list[ToolCallRecord] = []
        self.llm_calls = 0
        self.usage = TokenUsage()
        self._tool_calls_made = 0
        self._stops = 0
        self._transcript = Transcript(task.role) if task.verbose else None

    async def run(self) -> TaskOutput:
        """Run to completion and return the task's output."""
        started = time.perf_counter()
        specs = self.task.tools.specs if self.task.tools else None
        corrections = 0
        nudged = False
        while True:
            response = await self._ask_model(specs)
            if response.tool_calls:
                immediate = await self._run_tool_calls(response.tool_calls)
                if immediate is not None:
                    return self._output(immediate, started, returned_immediately=True)
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
            if self.task.output_type is None:
                return self._output(text, started)
            try:
                parsed = parse_output(text, self.task.output_type)
            except OutputParsingError as error:
                if corrections >= MAX_CORRECTIONS:
                    raise
                corrections += 1
                self.messages.append({"role": "assistant", "content": text})
                self.messages.append({"role": "user", "content": correction_message(error)})
                continue
            return self._output(text, started, parsed=parsed)

    async def _ask_model(self, specs: list[dict[str, Any]] | None) -> ChatResponse:
        if self._transcript is not None:
            self._transcript.messages(self.messages)
        started = time.perf_counter()
        response = await self.task.model.complete(self.messages, tools=specs or None)
        duration = time.perf_counter() - started
        if self._transcript is not None:
            self._transcript.answer(response)
        self.llm_calls += 1
        self.usage = self.usage + response.usage
        if self.env.emitter:
            self.env.emitter.emit(
                LLMCallCompleted(
                    agent_role=self.task.role,
                    model=model_label(self.task.model),
                    duration=timedelta(seconds=duration),
                    usage=response.usage,
                    tool_calls=len(response.tool_calls),
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
            emit=self.env.emitter.emit if self.env.emitter else None,
            task_description=self.task.description,
            agent_role=self.task.role,
        )
        with use_tool_context(context):
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
        self.messages.append(ChatResponse(tool_calls=list(calls)).to_message())
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

    def _behavior(self, name: str) -> ReturnBehavior:
        tool = self.task.tools.get(name) if self.task.tools else None
        return tool.return_behavior if tool is not None else ReturnBehavior.TO_LLM

    async def _run_one(self, call: ToolCall) -> _CallOutcome:
        tool = self.task.tools.get(call.name) if self.task.tools else None
        started = time.perf_counter()
        if tool is None:
            available = ", ".join(self.task.tools.names) if self.task.tools else "none"
            result = ToolResult.failure(f"Unknown tool '{call.name}'. Available tools: {available}")
            behavior = ReturnBehavior.TO_LLM
        else:
            called = await tool.call(call.arguments)
            result, ran_with = called.result, called.ran_with
            behavior = tool.return_behavior
            duration = time.perf_counter() - started
            return _CallOutcome(call, result, behavior, duration, True, ran_with)
        return _CallOutcome(call, result, behavior, time.perf_counter() - started, True)

    def _record(self, outcome: _CallOutcome) -> None:
        result = outcome.result
        content = result.output if result.is_success else f"Error: {result.error_message or ''}"
        if not outcome.executed:
            content = result.error_message or ""
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
        if self.env.emitter:
            self.env.emitter.emit(
                ToolCallCompleted(
                    agent_role=self.task.role,
                    task_description=self.task.description,
                    record=record,
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
        )


__all__ = ["AgentExecutor", "AgentTask", "ExecutionEnv"]
