"""The framework's exceptions. Every error a run raises is an ``AgentEnsembleError``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentensemble.redaction import redact_text
from agentensemble.run_context import current_run_id

if TYPE_CHECKING:
    from agentensemble.outputs import TaskOutput, ToolCallRecord


class AgentEnsembleError(Exception):
    """Base of every error raised by agentensemble.

    Its message passes the redaction policy when the error is made: errors are printed, logged,
    exported and shown to models, so a secret quoted by a cause (a provider's echo, a server's
    URL or stderr) is ``***`` in every one of them by construction.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__(*(redact_text(arg) if isinstance(arg, str) else arg for arg in args))


class ConfigurationError(AgentEnsembleError):
    """Bad wiring found before any model call: tools, templates, models, review setup."""


class ToolNameError(ConfigurationError, ValueError):
    """A tool name breaks the rule ``^[A-Za-z0-9_]+$``, at most 64 characters.

    Also a ValueError, so a pydantic validator reports it as a ``ValidationError`` on the field.
    """


class ModelSettingsError(ConfigurationError):
    """A model that cannot be called as configured: no model at all, a name without a provider,
    a missing API key or a bad base URL. Found before the first request; the message names the
    fix (the command line words it as options: ``--model``)."""

    def __init__(self, message: str, *, missing_key: bool = False) -> None:
        super().__init__(message)
        self.missing_key = missing_key
        """True when only an API key is missing (the rest of the settings may be right)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_model_settings_error, (str(self), self.missing_key))


def _rebuild_model_settings_error(message: str, missing_key: bool) -> ModelSettingsError:
    return ModelSettingsError(message, missing_key=missing_key)


class PromptTemplateError(ConfigurationError):
    """One or more template variables have no value; ``missing`` lists every one of them."""

    def __init__(self, missing: list[str], message: str | None = None) -> None:
        self.missing = sorted(set(missing))
        names = ", ".join(f"'{{{name}}}'" for name in self.missing)
        super().__init__(message or f"Missing template variables: {names}. Pass them in inputs=.")


class TaskExecutionError(AgentEnsembleError):
    """A task failed. Holds the task and every output completed before it (nothing is lost)."""

    def __init__(
        self,
        message: str,
        *,
        task: Any = None,
        completed_outputs: list[TaskOutput] | None = None,
    ) -> None:
        super().__init__(message)
        self.task = task
        self.completed_outputs: list[TaskOutput] = list(completed_outputs or [])
        self.run_id: str = current_run_id()  # the failed run's id
        self.trace: Any = None  # the run's ExecutionTrace up to the failure (None: capture off)


class ModelRefusalError(TaskExecutionError):
    """The provider refused the turn (its ``refusal`` words) or stopped it on its content filter
    or safety settings (``finish_reason`` ``content_filter``, Gemini's ``SAFETY``). Raised at
    once: asking again would get the same answer. ``.refusal`` holds the provider's words (""
    when a filter said none), ``.finish_reason`` the stop reason it gave."""

    def __init__(
        self,
        message: str,
        *,
        refusal: str = "",
        finish_reason: str = "",
        task: Any = None,
        completed_outputs: list[TaskOutput] | None = None,
    ) -> None:
        super().__init__(message, task=task, completed_outputs=completed_outputs)
        self.refusal = redact_text(refusal)
        self.finish_reason = finish_reason

    @classmethod
    def from_response(cls, response: Any, agent_role: str) -> ModelRefusalError:
        """The error for a refused ``ChatResponse`` of agent ``agent_role``'s model."""
        refusal = getattr(response, "refusal", None) or ""
        finish = getattr(response, "finish_reason", None) or ""
        model = getattr(response, "model", None) or "the model"
        said = f": {refusal}" if refusal else f" (finish_reason {finish!r})"
        kind = "refused" if refusal else "stopped on its content filter"
        return cls(
            f"Agent '{agent_role}': {model} {kind}{said}",
            refusal=refusal,
            finish_reason=finish,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_refusal, (str(self), self.refusal, self.finish_reason))


def _rebuild_refusal(message: str, refusal: str, finish_reason: str) -> ModelRefusalError:
    return ModelRefusalError(message, refusal=refusal, finish_reason=finish_reason)


class ParallelExecutionError(TaskExecutionError):
    """Tasks of a parallel run failed (``CONTINUE_ON_ERROR``): independent branches finished.

    ``completed_outputs`` in the ensemble's task order, ``failures`` maps each failed Task to
    its exception, ``skipped`` lists the tasks not run because a task they depend on failed.
    ``task`` is the first failed task in list order.
    """

    def __init__(
        self,
        message: str,
        *,
        completed_outputs: list[TaskOutput] | None = None,
        failures: dict[Any, BaseException] | None = None,
        skipped: list[Any] | None = None,
    ) -> None:
        self.failures: dict[Any, BaseException] = dict(failures or {})
        self.skipped: list[Any] = list(skipped or [])
        first = next(iter(self.failures), None)
        super().__init__(message, task=first, completed_outputs=completed_outputs)


class LoopMaxIterationsError(TaskExecutionError):
    """A ``Loop(on_max_iterations="fail")`` ran ``max_iterations`` times and ``until`` never held.

    ``completed_outputs`` holds every output of the run so far, every iteration included."""

    def __init__(
        self,
        message: str,
        *,
        loop_name: str,
        iterations: int,
        task: Any = None,
        completed_outputs: list[TaskOutput] | None = None,
    ) -> None:
        super().__init__(message, task=task, completed_outputs=completed_outputs)
        self.loop_name = loop_name
        self.iterations = iterations


class GraphMaxStepsError(TaskExecutionError):
    """A ``Graph(on_max_steps="fail")`` ran ``max_steps`` states without reaching ``Graph.END``."""

    def __init__(
        self,
        message: str,
        *,
        graph_name: str,
        path: list[str],
        task: Any = None,
        completed_outputs: list[TaskOutput] | None = None,
    ) -> None:
        super().__init__(message, task=task, completed_outputs=completed_outputs)
        self.graph_name = graph_name
        self.path = list(path)


class GraphNoEdgeError(TaskExecutionError):
    """No edge out of ``state`` matched after it ran: the graph cannot go on. Names the state."""

    def __init__(
        self,
        message: str,
        *,
        graph_name: str,
        state: str,
        path: list[str],
        task: Any = None,
        completed_outputs: list[TaskOutput] | None = None,
    ) -> None:
        super().__init__(message, task=task, completed_outputs=completed_outputs)
        self.graph_name = graph_name
        self.state = state
        self.path = list(path)


class AgentExecutionError(AgentEnsembleError):
    """An agent could not finish its task (empty answer, model misbehaviour, ...)."""


class MaxIterationsExceededError(AgentExecutionError):
    """The agent kept calling tools past ``max_iterations`` and ignored the stop instructions."""

    def __init__(self, message: str, *, tool_calls: list[ToolCallRecord] | None = None) -> None:
        super().__init__(message)
        self.tool_calls: list[ToolCallRecord] = list(tool_calls or [])


class ToolExecutionError(AgentEnsembleError):
    """Raise inside a tool to fail the call; the message goes back to the model as an error."""


class ToolArgumentsError(ToolExecutionError):
    """The tool's arguments were not valid; the message names what was wrong for the model."""


class ExitEarlyError(AgentEnsembleError):
    """Stops the whole run (raised by a tool or a reviewer); completed outputs are kept."""

    def __init__(self, reason: str | None = None, *, timed_out: bool = False) -> None:
        super().__init__(reason or "Exited early")
        self.reason = reason
        self.timed_out = timed_out


class OutputParsingError(AgentEnsembleError):
    """The model's answer could not be parsed into the task's ``output_type``."""

    def __init__(self, message: str, *, raw: str = "") -> None:
        super().__init__(message)
        self.raw = raw


class UntrustedInputError(AgentEnsembleError, ValueError):
    """Input from outside the process (model output, tool output, a server's answer) is too
    large, nested too deeply, too slow to parse or not valid; the message says which, briefly
    enough to show a model in a correction turn. Raised by ``agentensemble.untrusted``.

    ``reason`` is the message without the input's name (``not valid JSON (…)``), for callers
    that name the input themselves."""

    def __init__(self, what: str, reason: str) -> None:
        super().__init__(f"{what} is {reason}")
        self.what = what
        self.reason = reason


class GuardrailViolationError(AgentEnsembleError):
    """A guardrail failed: an input guardrail (before any model call), or an output guardrail
    still failing after the agent's corrections. Names the guardrail; the cause of a
    ``TaskExecutionError``."""

    def __init__(self, message: str, *, guardrail: str, kind: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.guardrail = guardrail
        self.kind = kind  # "input" or "output"
        self.attempts = attempts


class LLMError(AgentEnsembleError):
    """The model provider failed, after the retry policy gave up (or at once, if not retryable)."""

    def __init__(self, message: str, *, status_code: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.attempts = attempts


class AllModelsFailedError(LLMError):
    """Every model of a fallback chain failed this turn. ``failures`` pairs each model's name
    with its error, in chain order; the message lists them all."""

    def __init__(self, failures: list[tuple[str, BaseException]]) -> None:
        lines = "; ".join(f"{name}: {error}" for name, error in failures)
        last = failures[-1][1] if failures else None
        super().__init__(
            f"All {len(failures)} models of the fallback chain failed: {lines}",
            status_code=getattr(last, "status_code", None),
            attempts=sum(getattr(error, "attempts", 1) for _, error in failures),
        )
        self.failures = list(failures)


class UsageLimitExceeded(TaskExecutionError):
    """A run budget (``UsageLimits``) would be passed by the next model or tool call, which was
    not made. ``limit`` names the field (``"model_calls"``, ``"cost_usd"``...), ``used`` is what
    the run had used before that call (None: a cost that was unknown), ``allowed`` the limit;
    ``completed_outputs`` holds every task output finished before the stop, ``task`` the task
    whose call was refused. A TaskExecutionError (so every place that keeps a failed run's
    outputs, a durable run's record included, keeps these too), hence an AgentEnsembleError."""

    def __init__(
        self,
        limit: str,
        *,
        used: float | int | None,
        allowed: float | int,
        completed_outputs: list[TaskOutput] | None = None,
        detail: str = "",
    ) -> None:
        shown = "unknown" if used is None else f"{used:g}"
        more = f"; {detail}" if detail else ""
        super().__init__(
            f"Usage limit {limit}={allowed:g} reached ({shown} used{more}): "
            "the next call was not made",
            completed_outputs=completed_outputs,
        )
        self.detail = detail
        self.limit = limit
        self.used = used
        self.allowed = allowed

    def __reduce__(self) -> tuple[Any, ...]:
        state = (self.limit, self.used, self.allowed, self.completed_outputs, self.detail)
        return (_rebuild_usage_limit, state)


def _rebuild_usage_limit(
    limit: str,
    used: float | int | None,
    allowed: float | int,
    outputs: list[TaskOutput],
    detail: str,
) -> UsageLimitExceeded:
    return UsageLimitExceeded(
        limit, used=used, allowed=allowed, completed_outputs=outputs, detail=detail
    )


__all__ = [
    "AgentEnsembleError",
    "AgentExecutionError",
    "AllModelsFailedError",
    "ConfigurationError",
    "ExitEarlyError",
    "GraphMaxStepsError",
    "GraphNoEdgeError",
    "GuardrailViolationError",
    "LLMError",
    "LoopMaxIterationsError",
    "MaxIterationsExceededError",
    "ModelRefusalError",
    "ModelSettingsError",
    "OutputParsingError",
    "ParallelExecutionError",
    "PromptTemplateError",
    "TaskExecutionError",
    "ToolArgumentsError",
    "ToolExecutionError",
    "ToolNameError",
    "UntrustedInputError",
    "UsageLimitExceeded",
]
