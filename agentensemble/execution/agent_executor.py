"""One agent on one task: the model/tool loop on native function calling."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import field
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from agentensemble._base.dataclass import dataclass
from agentensemble.errors import (
    AgentEnsembleError,
    AgentExecutionError,
    LLMError,
    ModelRefusalError,
    OutputParsingError,
)
from agentensemble.events import LLMCallCompleted, LLMCallFailed, LLMCallStarted
from agentensemble.execution._instructions import computed_instructions
from agentensemble.execution._recall import show_recollection
from agentensemble.execution._verbose import Transcript
from agentensemble.execution._window import ContextWindow, Head, is_context_length_error
from agentensemble.execution.env import ExecutionEnv
from agentensemble.execution.guardrails import (
    check_input,
    first_failure,
    guardrail_feedback,
    output_violation,
)
from agentensemble.execution.prompts import (
    ContextItem,
    build_system_prompt,
    build_user_prompt,
    with_instructions,
    with_skills,
)
from agentensemble.execution.structured import (
    DEFAULT_OUTPUT_RETRIES,
    correction_message,
    output_instructions,
    parse_output,
    response_format,
)
from agentensemble.execution.tool_turn import ToolTurns
from agentensemble.guardrails import GuardrailInput
from agentensemble.limits import after_model_call, before_model_call
from agentensemble.llm._chain import answered_by
from agentensemble.llm.cost import add_costs, cost_usd
from agentensemble.llm.response_format import ResponseFormat, supports_response_format
from agentensemble.llm.types import (
    ATTACHMENTS_KEY,
    ChatModel,
    ChatResponse,
    Message,
    model_label,
)
from agentensemble.logging import get_logger
from agentensemble.outputs import TaskOutput, ToolCallRecord, no_usage
from agentensemble.redaction import redact_text
from agentensemble.run_context import model_call_scope, new_id_hex
from agentensemble.steps import as_step, replaced_output
from agentensemble.streaming import partial_outputs
from agentensemble.task_memory import TaskMemory
from agentensemble.tools.context import in_tool_call
from agentensemble.tools.policy import layered

if TYPE_CHECKING:
    from agentensemble.context_policy import ContextPolicy
    from agentensemble.tools.policy import ToolPolicy
    from agentensemble.tools.resolver import ResolvedTools

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
    instructions: Any = None  # the agent's: text, or a function of RunContext (each task start)
    skills: Sequence[tuple[str, str]] = ()  # the agent's skills: (name, description), listed
    attachments: Sequence[Any] = ()  # Image / Document / Audio sent with the task's prompt
    context_policy: ContextPolicy | None = None  # the agent's (else the run's: env)
    tool_policy: ToolPolicy | None = None  # the agent's, over the run's (env) setting by setting

    def for_run(self, description: str, context: Sequence[ContextItem]) -> AgentTask:
        """A copy for one run of the task, with its (reviewed) description and its context: a
        shallow copy like ``dataclasses.replace``, without running ``__init__`` again (a third
        of the cost, on every task run; the class has no ``__post_init__`` to skip)."""
        run = object.__new__(AgentTask)
        run.__dict__.update(self.__dict__, description=description, context=context)
        return run


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
                "content": with_instructions(
                    with_skills(
                        build_system_prompt(
                            task.role, task.goal, task.background, task.response_format
                        ),
                        task.skills,
                    ),
                    task.instructions if isinstance(task.instructions, str) else None,
                ),
            },
            {"role": "user", "content": self._user_prompt(schema_in_prompt=True)},
        ]
        if task.attachments:  # sent as content parts (llm/_messages.py); the text names them
            self.messages[1][ATTACHMENTS_KEY] = list(task.attachments)
        self._prompt_at = 1  # the task's own user message (after any session history)
        self._format: ResponseFormat | None = None
        self.records: list[ToolCallRecord] = []
        self.llm_calls = 0
        self.usage = no_usage()
        self.reasoning: str | None = None  # the last turn's, for TaskOutput.reasoning
        self.answered_by: str | None = None  # the last turn's model, for TaskOutput.model
        self._turns: ToolTurns | None = None
        self._transcript = Transcript(task.role) if task.verbose else None
        self._costs: list[float | None] = []
        self._model_step = f"model:{task.role}"
        self._window: ContextWindow | None = None  # the task's context policy, if any
        self._head: Head | None = None  # where its head is (set with the window)

    def _user_prompt(
        self, *, schema_in_prompt: bool, context: Sequence[ContextItem] | None = None
    ) -> str:
        task = self.task
        wants_schema = schema_in_prompt and task.output_type is not None
        return build_user_prompt(
            task.description,
            task.expected_output,
            task.context if context is None else context,
            output_instructions(task.output_type) if wants_schema else None,
        )

    def _prompt_showing(self, context: Sequence[ContextItem]) -> str:
        """The task's prompt as sent, with ``context`` for the earlier outputs (the context
        policy's shortened ones)."""
        return self._user_prompt(schema_in_prompt=self._format is None, context=context)

    async def _prepare(self) -> None:
        """Input guardrails first (no model call if one fails), then the output schema's route:
        the model's native ``response_format`` when it says it honours one, else the prompt."""
        task = self.task
        if callable(task.instructions):  # computed now, placed after the static system prompt
            text = await computed_instructions(task)
            self.messages[0]["content"] = with_instructions(self.messages[0]["content"], text)
        if task.input_guardrails:
            seen = GuardrailInput(
                description=task.description,
                expected_output=task.expected_output,
                agent_role=task.role,
                inputs=dict(task.inputs),
                context=tuple(item.output for item in task.context),
            )
            await check_input(task.input_guardrails, seen, self.env.emitter)
        history = 0
        if task.memory is not None:
            recalled = await task.memory.recall(task.description)
            self._prompt_at = show_recollection(self.messages, recalled, task, self.env.emitter)
            history = len(recalled.history)  # shown from index 1 (``show_recollection``)
        if task.output_type is not None and await supports_response_format(task.model):
            self._format = response_format(task.output_type)
            self.messages[self._prompt_at]["content"] = self._user_prompt(schema_in_prompt=False)
        policy = task.context_policy or self.env.context_policy
        if policy is not None:
            self._window = ContextWindow(
                policy,
                model=task.model,
                tools=task.tools.specs if task.tools is not None else None,
                task=task.task_name or task.description[:80],
                role=task.role,
                task_name=task.task_name,
                ask=self._summarise,
                emitter=self._emitter,
            )
            self._head = Head(self._prompt_at, history, task.context, self._prompt_showing)

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
        complete = self._completion()
        corrections = 0
        nudged = False
        while True:
            response = await self._ask_model(complete)
            if response.refused:  # a refusal or a filter stop: no retry as an "empty answer"
                raise ModelRefusalError.from_response(response, self.task.role)
            if response.tool_calls:
                said = next_message(response)
                turn = await self._tool_turns().run(response.tool_calls, said)
                if turn.next is not None:
                    output = self._output(turn.next, started, returned_immediately=True)
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
                self.messages.append(next_message(response))
                self.messages.append({"role": "user", "content": EMPTY_ANSWER_NUDGE})
                continue
            finished = await self._finish(text, started, attempt=corrections + 1)
            if isinstance(finished, TaskOutput):
                return finished
            error, feedback = finished
            if corrections >= self.task.max_output_retries:
                raise error
            corrections += 1
            self.messages.append(next_message(response))
            self.messages.append({"role": "user", "content": feedback})

    def _tool_turns(self) -> ToolTurns:
        """The task's tool turns (made at its first tool call: most tasks of a run make none)."""
        if self._turns is None:
            task = self.task
            self._turns = ToolTurns(
                tools=task.tools,
                role=task.role,
                description=task.description,
                limit=task.max_iterations,
                env=self.env,
                emitter=self._emitter,
                messages=self.messages,
                records=self.records,
                model=self.task.model,
                tool_policy=layered(task.tool_policy, self.env.tool_policy),
            )
        return self._turns

    def _completion(self) -> Callable[[list[Message]], Awaitable[ChatResponse]]:
        """The model's ``complete`` with this task's tools and output format bound (fixed once
        ``_prepare`` chose the format's route): each turn passes only the messages."""
        specs = self.task.tools.specs if self.task.tools is not None else None
        options: dict[str, Any] = {"tools": specs or None}
        if self._format is not None:  # a model that said it takes the format
            options["response_format"] = self._format
        return partial(self.task.model.complete, **options)

    async def _ask_model(
        self, complete: Callable[[list[Message]], Awaitable[ChatResponse]]
    ) -> ChatResponse:
        """One turn of the task's model, inside the task's context policy when it has one
        (``_window.py``: the prompt fitted to the window first; a provider's context-length
        error compacts once and asks again)."""
        window = self._window
        if window is None:
            return await self._send(self.task.model, complete, self.messages, self._model_step)
        head = self._head
        assert head is not None  # set with the window
        await window.fit(self.messages, head)
        try:
            return await self._send(self.task.model, complete, self.messages, self._model_step)
        except LLMError as error:
            if not is_context_length_error(error):
                raise
            if not await window.after_error(self.messages, head):
                raise
        return await self._send(self.task.model, complete, self.messages, self._model_step)

    async def _summarise(self, model: ChatModel, messages: list[Message]) -> ChatResponse:
        """A context policy's summary request: a model call of the task like its own turns
        (checked against the run's limits, in events, the trace, usage and cost; a step of a
        durable run)."""
        return await self._send(model, model.complete, messages, f"summary:{self.task.role}")

    async def _send(
        self,
        model: ChatModel,
        complete: Callable[[list[Message]], Awaitable[ChatResponse]],
        messages: list[Message],
        step: str,
    ) -> ChatResponse:
        own_turn = messages is self.messages  # not a context policy's summary request
        if self._transcript is not None and own_turn:
            self._transcript.messages(messages)
        role, name, emitter = self.task.role, self.task.task_name, self._emitter
        label, call_id = model_label(model), new_id_hex()
        specs = self.task.tools.specs if self.task.tools is not None and own_turn else None
        await before_model_call(model, messages, specs)  # limits.py: run budget
        if emitter is not None:
            emitter.emit(LLMCallStarted(role, label, call_id, name, list(messages)))
        started = time.perf_counter()
        try:
            with model_call_scope(role, name, call_id):
                watch = (
                    None  # one check on an untyped task's call; streaming or not is asked after
                    if self.task.output_type is None or emitter is None or not own_turn
                    else partial_outputs(self.task.output_type, emitter.emit)
                )
                if watch is None:
                    response: ChatResponse = await as_step("model", step, complete, messages)
                else:  # a typed task, streamed: its fields so far as PartialOutput events
                    with watch:
                        response = await as_step("model", step, complete, messages)
        except Exception as error:
            if emitter is not None:
                failed_after = timedelta(seconds=time.perf_counter() - started)
                emitter.emit(LLMCallFailed(role, label, call_id, failed_after, error, name))
            raise
        duration = time.perf_counter() - started
        if self._transcript is not None and own_turn:
            self._transcript.answer(response)
        self.llm_calls += 1
        self.usage = self.usage + response.usage
        label = answered_by(model, response, label)  # a fallback chain: who answered
        if own_turn:
            self.answered_by = label
            self.reasoning = redact_text(response.reasoning) if response.reasoning else None
        cost = cost_usd(response.usage, label, response.model)
        self._costs.append(cost)
        after_model_call(response.usage, cost)
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
            reasoning=self.reasoning,
            model=self.answered_by,
        )


def next_message(response: ChatResponse) -> Message:
    """The assistant's message the conversation goes on with after ``response``: its tool
    calls (appended with their results), else its text (an empty answer nudged, an output
    sent back for correction). The one place that decides what of a response the model sees
    again."""
    if response.tool_calls:  # the turn as it was: text beside the calls, provider parts
        return response.to_message()
    return {"role": "assistant", "content": response.content or ""}


__all__ = ["AgentExecutor", "AgentTask", "ExecutionEnv", "next_message"]
