"""WebhookReviewHandler against hostile webhooks: every answer is untrusted.

Each attack is a real HTTP server on 127.0.0.1. Whatever it answers, the handler ends with a
decision, ``on_timeout`` or a ``ReviewProtocolError`` (never a raw httpx/json error the model
would read), within its time bounds, without fetching another origin and without leaking a
credential into any message, log line or text for the model.
"""

from __future__ import annotations

import gzip
import logging
import socket
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from _review_support import Seen, adhoc_server, json_reply

from agentensemble_review import (
    Continue,
    ExitEarly,
    OnTimeoutAction,
    ReviewProtocolError,
    ReviewRequest,
    ReviewRequestRefusedError,
    ReviewTiming,
    WebhookReviewHandler,
    aask,
)

MARGIN = 3.0  # scheduling slack on a busy machine; the failures these catch take far longer


def make_request(
    timeout: float = 5.0,
    on_timeout: OnTimeoutAction = OnTimeoutAction.EXIT_EARLY,
    output: str = '{"path": "/tmp/old"}',
) -> ReviewRequest:
    return ReviewRequest(
        timing=ReviewTiming.DURING_EXECUTION,
        task_description="Tidy the disk",
        output=output,
        tool_name="delete_file",
        timeout=timedelta(seconds=timeout),
        on_timeout=on_timeout,
    )


# -- hostile answers: a clear ReviewProtocolError, never a raw exception -------------------------

HOSTILE_ANSWERS = [
    pytest.param(
        json_reply(202, {}, {"Location": "//elsewhere.invalid/poll"}),
        "Location on another origin",
        id="location-other-host",
    ),
    pytest.param(
        json_reply(202, {}, {"Location": "https://127.0.0.1/poll"}),
        "Location on another origin",
        id="location-other-scheme-and-port",
    ),
    pytest.param(
        json_reply(202, {}, {"Location": "http://[::1"}), "invalid Location", id="location-garbled"
    ),
    pytest.param(
        (200, {"Content-Encoding": "gzip"}, b"this is not gzip"),
        "could not be used: DecodingError",
        id="bad-gzip",
    ),
    pytest.param(
        (200, {"Content-Encoding": "gzip"}, gzip.compress(b" " * 3_000_000)),
        "more than 1000000 bytes",
        id="gzip-bomb",
    ),
    pytest.param((200, {}, b"[" * 200_000 + b"]" * 200_000), "nested too deeply", id="deep-json"),
    pytest.param((200, {}, b"\xff\xfe"), "not UTF-8", id="not-utf8"),
    pytest.param(
        json_reply(200, {"decision": "continue\x1b[2J"}),
        r"unknown decision 'continue\\x1b\[2J'",
        id="ansi-in-decision",
    ),
    pytest.param(json_reply(401, {}), "answered 401", id="401-stays-an-error"),
    pytest.param(json_reply(403, {}), "answered 403", id="403-stays-an-error"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("reply", "message"), HOSTILE_ANSWERS)
async def test_hostile_answers_raise_a_clear_review_protocol_error(
    reply: tuple[int, dict[str, str], bytes], message: str
) -> None:
    with adhoc_server(lambda seen: reply) as (url, seen):
        handler = WebhookReviewHandler(url, poll_interval=0.05, max_retries=0)
        with pytest.raises(ReviewProtocolError, match=message) as caught:
            await aask(handler, make_request(5, OnTimeoutAction.CONTINUE))
    assert type(caught.value) is ReviewProtocolError  # not "refused": the run stops
    assert [s.method for s in seen] == ["POST"]  # nothing else was fetched
    assert "\x1b" not in str(caught.value)


@pytest.mark.anyio
async def test_a_location_on_another_origin_is_never_fetched() -> None:
    def elsewhere(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        return json_reply(202, {}, {"Location": f"{other}/poll"})

    with (
        adhoc_server(lambda seen: json_reply(200, {"decision": "continue"})) as (other, polled),
        adhoc_server(elsewhere) as (url, _),
    ):
        handler = WebhookReviewHandler(
            url, headers={"Authorization": "Bearer tok123456"}, poll_interval=0.05
        )
        with pytest.raises(ReviewProtocolError, match="it was not fetched"):
            await handler.areview(make_request())
    assert polled == []


@pytest.mark.anyio
@pytest.mark.parametrize("status", [400, 413, 422])
async def test_a_refused_request_is_told_apart_from_a_failing_service(status: int) -> None:
    with adhoc_server(lambda seen: json_reply(status, {"error": "too big"})) as (url, _):
        handler = WebhookReviewHandler(url, max_retries=0)
        request = make_request(output="x" * 5000)
        with pytest.raises(ReviewRequestRefusedError) as caught:
            await handler.areview(request)
    assert caught.value.status_code == status
    assert caught.value.request_bytes > 5000
    if status == 413:
        assert caught.value.problem.startswith("the tool input is too large (")


# -- numbers and headers parsed defensively -------------------------------------------------------

RETRY_AFTER = [
    "nan",
    "NaN",
    "inf",
    "-inf",
    "-5",
    "1e309",
    "abc",
    "",
    "0x10",
    "9" * 300,
    "Wed, 21 Oct 2015 07:28:00 GMT",
    "Wed, 99 Foo 2015 07:28:00 GMT",
]


@pytest.mark.anyio
@pytest.mark.parametrize("value", RETRY_AFTER)
async def test_unusable_retry_after_is_ignored(value: str) -> None:
    answers = iter(
        [
            json_reply(202, {}, {"Location": "/r/1", "Retry-After": value}),
            json_reply(200, {"decision": "continue"}),
        ]
    )
    with adhoc_server(lambda seen: next(answers)) as (url, _):
        handler = WebhookReviewHandler(url, poll_interval=0.05)
        started = time.monotonic()
        assert await handler.areview(make_request(10)) == Continue()
    assert time.monotonic() - started < MARGIN


@pytest.mark.anyio
async def test_a_huge_retry_after_is_bounded_by_the_review_deadline() -> None:
    with adhoc_server(
        lambda seen: json_reply(202, {}, {"Location": "/r", "Retry-After": "1e9"})
    ) as (
        url,
        _,
    ):
        handler = WebhookReviewHandler(url, poll_interval=0.05)
        started = time.monotonic()
        decision = await handler.areview(make_request(1.0))
    assert isinstance(decision, ExitEarly) and decision.timed_out
    assert time.monotonic() - started < 1.0 + MARGIN


@pytest.mark.parametrize(
    "kwargs",
    [
        {"poll_interval": float("nan")},
        {"poll_interval": float("inf"), "max_poll_interval": float("inf")},
        {"max_poll_interval": float("nan")},
        {"request_timeout": float("nan")},
        {"request_timeout": float("inf")},
        {"request_timeout": -1},
        {"timeout": float("nan")},
        {"timeout": float("inf")},
        {"poll_interval": True},
        {"headers": {"Authorization": "Bearer x\r\nX-Injected: 1"}},
        {"headers": {"X-Name": "caf\u00e9"}},
    ],
)
def test_non_finite_settings_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        WebhookReviewHandler("http://127.0.0.1:9/reviews", **kwargs)


# -- time bounds on the whole call ----------------------------------------------------------------


@contextmanager
def drip_server(head: bytes, drip: bytes, every: float = 0.05) -> Iterator[str]:
    """A server that answers every connection with ``head`` and then one byte of ``drip`` every
    ``every`` seconds: each read arrives in time, the answer never completes."""
    stop = threading.Event()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.1)

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(head)
                for byte in drip:  # bounded by the drip's length and by stop
                    if stop.wait(every):
                        return
                    conn.sendall(bytes([byte]))
            except OSError:
                return

    def accept() -> None:
        while not stop.is_set():  # bounded by stop
            try:
                conn, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/reviews"
    finally:
        stop.set()
        thread.join(5)
        listener.close()


DRIPS = [
    pytest.param(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n",
        b" " * 4000,
        id="body",
    ),
    pytest.param(b"HTTP/1.1 200 OK\r\n", b"X-Slow: " + b"a" * 4000, id="headers"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("head", "drip"), DRIPS)
@pytest.mark.parametrize("review_timeout", [30.0, 0.0], ids=["review-30s", "review-no-limit"])
async def test_a_drip_fed_answer_cannot_hold_a_call_open(
    head: bytes, drip: bytes, review_timeout: float
) -> None:
    with drip_server(head, drip) as url:
        handler = WebhookReviewHandler(url, request_timeout=1.0, max_retries=1)
        started = time.monotonic()
        decision = await handler.areview(make_request(review_timeout))
    elapsed = time.monotonic() - started
    assert isinstance(decision, ExitEarly) and decision.timed_out
    assert "no complete answer within 1s" in (decision.reason or "")
    assert elapsed < 2 * 1.0 + 1.5 + MARGIN  # two bounded calls and a backoff, not 200 s of drip


# -- secrets: never in a message, a log line, a traceback or the model's text --------------------

PATH_TOKEN = "T0kenInPath9f8e7d6c"
QUERY_TOKEN = "q-token-4242abcd"
BEARER = "bearer-value-77aa88bb"
SIGNING = "signing-secret-0099"


def echo_everything(status: int) -> Any:
    def respond(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        echoed = f"{seen.path} {seen.headers.get('Authorization')} {SIGNING}"
        if status == 200:
            return json_reply(200, {"decision": "exit_early", "reason": f"no: {echoed}"})
        return json_reply(status, {"error": echoed})

    return respond


@pytest.mark.anyio
@pytest.mark.parametrize("status", [200, 404, 413, 503])
async def test_credentials_echoed_by_the_webhook_are_redacted_everywhere(
    status: int, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG), adhoc_server(echo_everything(status)) as (base, _):
        handler = WebhookReviewHandler(
            f"{base}/hooks/{PATH_TOKEN}?key={QUERY_TOKEN}",
            secret=SIGNING,
            headers={"Authorization": f"Bearer {BEARER}"},
            max_retries=0,
        )
        texts = [repr(handler)]
        try:
            decision = await handler.areview(make_request(5))
            texts.append(str(decision.model_dump()))
        except ReviewProtocolError as exc:
            texts.append("".join(traceback.format_exception(exc)))
    texts += [caplog.text, " ".join(str(r.__dict__) for r in caplog.records)]
    everything = "\n".join(texts)
    assert "HTTP Request" in caplog.text or status == 503  # httpx's own INFO line was captured
    for secret in (PATH_TOKEN, QUERY_TOKEN, BEARER, SIGNING):
        assert secret not in everything


def test_a_token_in_the_url_path_is_masked_in_messages() -> None:
    handler = WebhookReviewHandler(f"https://user:pw-123456@hooks.example/services/{PATH_TOKEN}")
    assert repr(handler) == "WebhookReviewHandler(url='https://hooks.example/services/***')"


@pytest.mark.anyio
@pytest.mark.parametrize("status", [404, 503])
async def test_a_plain_looking_path_token_never_reaches_the_rejection_text(
    status: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Hosted webhooks (``/hooks/catch/<account>/<token>/``) carry the credential in the path,
    and it need not look like one: the text the model gets when the webhook fails, the logs and
    the error never show it."""
    from agentensemble import Agent, Ensemble, Task, TaskExecutionError, tool
    from agentensemble.testing import ScriptedChatModel, tool_call

    with (
        caplog.at_level(logging.DEBUG),
        adhoc_server(lambda _: json_reply(status, {})) as (
            base,
            _,
        ),
    ):
        handler = WebhookReviewHandler(f"{base}/hooks/catch/734512/opensesame/", max_retries=0)

        @tool(requires_approval=True)
        def deploy(target: str) -> str:
            """Deploy.

            Args:
                target: where
            """
            return "deployed"

        model = ScriptedChatModel([tool_call("deploy", {"target": "prod"}), "stopped"])
        agent = Agent(role="Ops", goal="Deploy", tools=[deploy], llm=model)
        ensemble = Ensemble(tasks=[Task(description="Deploy", agent=agent)], review_handler=handler)
        texts: list[str] = [repr(handler)]
        try:
            output = await ensemble.arun()
            texts += [str(model.requests[1].tool_results), output.model_dump_json()]
        except TaskExecutionError as exc:  # a 404 is a broken webhook: the run stops
            texts.append("".join(traceback.format_exception(exc)))
    texts += [caplog.text, " ".join(str(r.__dict__) for r in caplog.records)]
    everything = "\n".join(texts)
    assert "hooks/catch/***/***" in everything
    assert "opensesame" not in everything and "734512" not in everything


# -- what the model sends is always sendable ---------------------------------------------------


@pytest.mark.anyio
async def test_a_lone_surrogate_in_the_tool_input_is_sent_as_valid_json() -> None:
    with adhoc_server(lambda seen: json_reply(200, {"decision": "continue"})) as (url, seen):
        handler = WebhookReviewHandler(url)
        assert await handler.areview(make_request(output='{"to": "\ud800"}')) == Continue()
    assert b"\\ud800" in seen[0].body
    seen[0].body.decode("utf-8")  # valid UTF-8 on the wire


@pytest.mark.anyio
@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_a_gzip_bomb_costs_no_more_than_the_answer_bound(encoding: str) -> None:
    """100 kB inflating to 100 MB: refused at 1 MB as before, but httpx inflated each 64 KiB
    read whole first, so the run's process held 150 MB for a 1 MB bound. The body is now
    inflated only as far as the bound allows."""
    import tracemalloc
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 31 if encoding == "gzip" else 15)
    chunk = b" " * 1_000_000
    bomb = b"".join([*(packer.compress(chunk) for _ in range(100)), packer.flush()])
    reply = (200, {"Content-Type": "application/json", "Content-Encoding": encoding}, bomb)
    with adhoc_server(lambda seen: reply) as (url, seen):
        handler = WebhookReviewHandler(url, poll_interval=0.05, max_retries=0)
        tracemalloc.start()
        try:
            with pytest.raises(ReviewProtocolError, match="more than 1000000 bytes"):
                await aask(handler, make_request(5, OnTimeoutAction.CONTINUE))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert seen[0].headers.get("Accept-Encoding") == "gzip, deflate"  # never br or zstd
    assert peak < 20_000_000, f"{peak / 1e6:.0f} MB held for a 1 MB bound"


@pytest.mark.anyio
async def test_an_answer_in_an_encoding_not_asked_for_is_refused() -> None:
    reply = (200, {"Content-Encoding": "br"}, b"\x0b\x02\x80" + b"x" * 10)
    with adhoc_server(lambda seen: reply) as (url, _):
        handler = WebhookReviewHandler(url, poll_interval=0.05, max_retries=0)
        with pytest.raises(ReviewProtocolError, match="DecodingError"):
            await aask(handler, make_request(5, OnTimeoutAction.CONTINUE))
