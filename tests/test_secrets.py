"""Secrets stay secret: API keys, webhook secrets and Authorization headers never show.

Real runs over local HTTP servers (the OpenAI-compatible test server and the reference
``ReviewServer``), with ``configure_logging("DEBUG")``, ``verbose=True`` and a listener
recording every event, with things going wrong: a rate limit, a failing tool, a provider that
rejects the key and echoes it back, a webhook that refuses the signature. Everything a user can
see is then searched for the secrets: the log output and console progress, every log record of
every library, exception messages, ``str``/``repr`` of errors and of every exception in their
chain (and the formatted traceback), ``repr()`` of agents, ensembles, models, handlers and
outputs, and the events.
"""

from __future__ import annotations

import functools
import io
import logging
import sys
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from agentensemble import (
    LLM,
    AbstractAgentTool,
    Agent,
    Ensemble,
    EnsembleEvent,
    LLMError,
    RetryPolicy,
    Task,
    TaskExecutionError,
    TaskFailed,
    configure_logging,
    tool,
)
from agentensemble_review import ReviewPolicy, ReviewServer, WebhookReviewHandler

sys.path.insert(0, str(Path(__file__).parent / "e2e"))  # the local OpenAI-compatible server
from openai_server import OpenAIServer

API_KEY = "sk-live-7d41c9e0b2a84f6e9c3d5a1b8e2f4c60"
WEBHOOK_SECRET = "whsec_5Jq8LmN2pR7tV4xZ9bC1dF6gH3kM0vW"
BEARER_TOKEN = "rvtok_Qm7Xc2Lp9Zt4Vb8Nw1Ks6Hd3Jf5Gy0aE"
WRONG_SECRET = "whsec_WRONG_8sD3fG6hJ9kL2zX5cV7bN1mQ4"
SECRETS = (API_KEY, WEBHOOK_SECRET, BEARER_TOKEN, WRONG_SECRET)
FAST = RetryPolicy(max_attempts=3, initial_backoff=0.001, max_backoff=0.01, jitter=0)


def leaks(text: str) -> list[str]:
    """The secrets (or any 12-character piece of one) found in ``text``."""
    found = []
    for secret in SECRETS:
        pieces = {secret[i : i + 12] for i in range(len(secret) - 11)}
        if any(piece in text for piece in pieces):
            found.append(secret)
    return found


def assert_clean(where: str, *things: object) -> None:
    for thing in things:
        text = thing if isinstance(thing, str) else f"{thing!s}\n{thing!r}"
        assert not leaks(text), f"secret in {where}: {text[:2000]}"


def assert_error_clean(error: BaseException) -> None:
    """The error, every exception in its chain, and the traceback Python would print."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        assert_clean(f"{type(current).__name__} in the chain", current, str(current.args))
        current = current.__cause__ or current.__context__
    assert_clean("the formatted traceback", "".join(traceback.format_exception(error)))


# -- fixtures --------------------------------------------------------------------------------


class Captured:
    """Everything the library wrote: its log output, the console progress on stderr, and every
    log record any library emitted."""

    def __init__(
        self,
        logs: io.StringIO,
        capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        self.logs = logs
        self.capsys = capsys
        self.caplog = caplog
        self.console = ""

    def text(self) -> str:
        out, err = self.capsys.readouterr()
        self.console += out + err
        records = "\n".join(
            f"{r.name} {r.levelname} {r.getMessage()} {r.__dict__}" for r in self.caplog.records
        )
        return "\n".join([self.logs.getvalue(), self.console, records])


@pytest.fixture
def captured(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> Iterator[Captured]:
    """``configure_logging("DEBUG")`` into a buffer; every other library's records at DEBUG."""
    logger = logging.getLogger("agentensemble")
    level, propagate, handlers = logger.level, logger.propagate, list(logger.handlers)
    caplog.set_level(logging.DEBUG)
    configure_logging("DEBUG")
    logs = io.StringIO()
    for handler in logger.handlers:
        if isinstance(handler, logging.StreamHandler) and handler not in handlers:
            handler.setStream(logs)  # the handler configure_logging made for stderr
    try:
        yield Captured(logs, capsys, caplog)
    finally:
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate


@pytest.fixture
def provider() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def review_server() -> Iterator[ReviewServer]:
    """The reference webhook, with a reviewer thread approving whatever arrives."""
    stop = threading.Event()
    with ReviewServer(port=0, secret=WEBHOOK_SECRET) as server:

        def approve() -> None:
            while not stop.is_set():
                record = server.store.wait_for_pending(timeout=0.05)
                if record is not None:
                    server.decide(record.id, {"decision": "continue"})

        reviewer = threading.Thread(target=approve, name="test-reviewer", daemon=True)
        reviewer.start()
        yield server
        stop.set()
        reviewer.join(timeout=5)


class Recorder:
    def __init__(self) -> None:
        self.events: list[EnsembleEvent] = []

    def on_event(self, event: EnsembleEvent) -> None:
        self.events.append(event)


class Vault(AbstractAgentTool):
    name = "vault"
    description = "Fails, as tools sometimes do."

    def do_execute(self, input: str) -> str:
        raise RuntimeError(f"vault is locked for {input!r}")


@tool
def weather(city: str) -> str:
    """Today's weather."""
    return f"sunny in {city}"


def llm_for(server: OpenAIServer) -> LLM:
    return LLM("openai/test-model", api_base=server.base_url, api_key=API_KEY, retry_policy=FAST)


def webhook(server: ReviewServer, secret: str = WEBHOOK_SECRET) -> WebhookReviewHandler:
    return WebhookReviewHandler(
        server.reviews_url,
        secret=secret,
        headers={"Authorization": f"Bearer {BEARER_TOKEN}"},
        timeout=10,
        poll_interval=0.02,
        max_poll_interval=0.05,
        max_retries=1,
    )


def team(llm: LLM, handler: WebhookReviewHandler, recorder: Recorder) -> Ensemble:
    agent = Agent(role="Analyst", goal="Report", tools=[Vault(), weather], llm=llm, verbose=True)
    return Ensemble(
        tasks=[
            Task(description="Check the vault and the weather", agent=agent),
            Task(description="Write the report", agent=agent),
        ],
        review_handler=handler,
        review_policy=ReviewPolicy.AFTER_EVERY_TASK,
        listeners=[recorder],
        verbose=True,
    )


# -- the tests -------------------------------------------------------------------------------


@pytest.mark.usefixtures("model_lane")  # the same on both model lanes
def test_a_run_with_retries_tool_errors_and_webhook_reviews_shows_no_secret(
    captured: Captured, provider: OpenAIServer, review_server: ReviewServer
) -> None:
    provider.push_fault(429, retry_after=0)
    provider.push_tool_calls([("vault", {"input": "codes"}), ("weather", {"city": "Oslo"})])
    provider.push_text("The vault is locked; it is sunny in Oslo.")
    provider.push_fault(503)
    provider.push_text("Report: sunny, vault locked.")
    recorder = Recorder()
    llm = llm_for(provider)
    handler = webhook(review_server)
    ensemble = team(llm, handler, recorder)

    result = ensemble.run()

    assert result.raw == "Report: sunny, vault locked."
    assert len(review_server.store.all()) == 2  # both reviews went through the webhook
    # the secrets really were used, so their absence below means something
    assert provider.log[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert "sunny in Oslo" in captured.text()  # DEBUG tool output made it to the log
    assert "[1/2]" in captured.text()  # and so did the verbose console progress
    assert "llm_retry" in captured.text()  # the 429 and the 503 were retried and logged
    assert "vault is locked" in captured.text()  # the failing tool was logged
    assert_clean("the logs and console output", captured.text())
    assert_clean("the events", *recorder.events)
    assert_clean("reprs", llm, llm.model_dump_json(), handler, review_server, ensemble)
    assert_clean("reprs", *ensemble.tasks, *(t.agent for t in ensemble.tasks))
    assert_clean("the outputs", result, *result.task_outputs, result.model_dump_json())


@pytest.mark.usefixtures("model_lane")  # the same on both model lanes
def test_a_rejected_key_echoed_by_the_provider_is_not_repeated(
    captured: Captured, provider: OpenAIServer, review_server: ReviewServer
) -> None:
    provider.push_fault(
        401,
        body=(
            '{"error": {"message": "Incorrect API key provided: ' + API_KEY + '", '
            '"type": "invalid_request_error", "code": "invalid_api_key"}}'
        ),
    )
    recorder = Recorder()

    with pytest.raises(TaskExecutionError) as info:
        team(llm_for(provider), webhook(review_server), recorder).run()

    assert len(provider.requests) == 1  # a 401 is not retried
    assert "401" in str(info.value)
    assert_error_clean(info.value)
    [failed] = [e for e in recorder.events if isinstance(e, TaskFailed)]
    assert_error_clean(failed.error)
    assert_clean("the events", *recorder.events)
    assert "failed" in captured.text()
    assert_clean("the logs and console output", captured.text())


def test_a_webhook_refusing_the_signature_fails_without_showing_secrets(
    captured: Captured, provider: OpenAIServer, review_server: ReviewServer
) -> None:
    provider.push_tool_calls([("weather", {"city": "Bergen"})])
    provider.push_text("Rain in Bergen.")
    recorder = Recorder()
    handler = webhook(review_server, secret=WRONG_SECRET)

    with pytest.raises(TaskExecutionError) as info:
        team(llm_for(provider), handler, recorder).run()

    assert "401" in str(info.value)
    assert [o.raw for o in info.value.completed_outputs] == []
    assert_error_clean(info.value)
    assert_clean("reprs", handler)
    assert_clean("the events", *recorder.events)
    assert_clean("the logs and console output", captured.text())


def test_models_and_handlers_never_show_secrets_in_repr() -> None:
    llm = LLM("openai/gpt-4o-mini", api_key=API_KEY, extra_headers={"Authorization": BEARER_TOKEN})
    handler = WebhookReviewHandler(
        "https://reviews.example/hook?token=" + BEARER_TOKEN,
        secret=WEBHOOK_SECRET,
        headers={"Authorization": f"Bearer {BEARER_TOKEN}"},
    )
    server = ReviewServer(port=0, secret=WEBHOOK_SECRET)
    agent = Agent(role="Analyst", goal="Report", llm=llm)
    ensemble = Ensemble(tasks=[Task(description="Report", agent=agent)], review_handler=handler)

    for thing in (llm, handler, server, agent, ensemble):
        assert_clean(type(thing).__name__, thing, str(thing), f"{thing!r}")
    assert_clean("LLM.model_dump_json()", llm.model_dump_json())
    assert_clean("LLM.model_dump()", str(llm.model_dump()))
    assert llm.api_key is not None and llm.api_key.get_secret_value() == API_KEY


def test_the_provider_error_kept_as_cause_is_redacted_too() -> None:
    class ProviderError(Exception):
        status_code = 401

        def __init__(self, message: str) -> None:
            super().__init__(message)
            self.message = message

    async def call() -> str:
        try:
            raise ValueError(f"upstream said Authorization: Bearer {BEARER_TOKEN}")
        except ValueError as upstream:
            raise ProviderError(f"Incorrect API key provided: {API_KEY}") from upstream

    with pytest.raises(LLMError) as info:
        anyio.run(functools.partial(RetryPolicy(max_attempts=1).run, call, secrets=[API_KEY]))

    assert isinstance(info.value.__cause__, ProviderError)  # kept for debugging...
    assert "Incorrect API key provided: ***" in str(info.value.__cause__)  # ...minus the key
    assert_error_clean(info.value)


def test_redaction_catches_key_shapes_in_free_text(captured: Captured) -> None:
    log = logging.getLogger("agentensemble")
    log.warning(f"calling with key {API_KEY} and header Authorization: Bearer {BEARER_TOKEN}")
    from agentensemble.logging import get_logger

    get_logger().info("request", api_key=API_KEY, headers={"Authorization": BEARER_TOKEN})
    assert "calling with key" in captured.text()
    assert_clean("the logs", captured.logs.getvalue())


class _Holder:
    """Not a model: an object whose repr shows what it holds."""

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"_Holder({self.value!r})"


def test_objects_in_log_fields_show_no_secret(captured: Captured) -> None:
    """A model or any object passed as a log field was rendered by its repr, secrets and all:
    redaction looked into strings, dicts and lists only."""
    from pydantic import BaseModel

    from agentensemble.logging import get_logger, register_secret

    class Reply(BaseModel):
        note: str

    register_secret(BEARER_TOKEN)
    get_logger().warning("structlog field", reply=Reply(note=f"key {API_KEY}"))
    get_logger().warning("structlog object", held=_Holder(BEARER_TOKEN), plain=_Holder("fine"))
    logging.getLogger("agentensemble.fields").warning(
        "stdlib extra", extra={"reply": Reply(note=BEARER_TOKEN), "held": _Holder(API_KEY)}
    )
    text = captured.logs.getvalue()
    assert "structlog field" in text and "stdlib extra" in text
    assert "_Holder('fine')" in text  # an object with nothing to hide is shown as it was
    assert_clean("the logs", text)
