"""The webhook wire format: payload, signature, decision JSON (strict, never guessing)."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import timedelta
from typing import Any

import pytest

from agentensemble_review import (
    Continue,
    Edit,
    ExitEarly,
    OnTimeoutAction,
    ReviewDecision,
    ReviewProtocolError,
    ReviewRequest,
    ReviewTiming,
    decision_from_json,
    decision_to_json,
    request_to_json,
    sign,
    verify_signature,
)
from agentensemble_review.protocol import encode_request

BODY = b'{"id":"1","output":"caf\xc3\xa9"}'


def test_sign_is_hmac_sha256_of_the_exact_bytes() -> None:
    expected = hmac.new(b"k", BODY, hashlib.sha256).hexdigest()
    assert sign(BODY, "k") == f"sha256={expected}"


@pytest.mark.parametrize(
    ("body", "header", "secret", "valid"),
    [
        (BODY, sign(BODY, "k"), "k", True),
        (BODY, sign(BODY, "k").upper().replace("SHA256=", "sha256="), "k", True),
        (BODY, " " + sign(BODY, "k") + " ", "k", True),
        (BODY, sign(BODY, "other"), "k", False),
        (BODY + b" ", sign(BODY, "k"), "k", False),
        (BODY, sign(BODY, "k").removeprefix("sha256="), "k", False),
        (BODY, "sha1=" + sign(BODY, "k").removeprefix("sha256="), "k", False),
        (BODY, None, "k", False),
        (BODY, "", "k", False),
        (BODY, sign(BODY, ""), "", False),
        (BODY, "sha256=caf\u00e9", "k", False),
    ],
)
def test_verify_signature(body: bytes, header: str | None, secret: str, valid: bool) -> None:
    assert verify_signature(body, header, secret) is valid


def test_request_payload_has_the_documented_fields() -> None:
    request = ReviewRequest(
        id="r-1",
        timing=ReviewTiming.DURING_EXECUTION,
        task_description="Clean up",
        output='{"path": "/tmp/x"}',
        prompt="Delete?",
        tool_name="delete_file",
        timeout=timedelta(seconds=90),
        on_timeout=OnTimeoutAction.FAIL,
    )
    assert request_to_json(request) == {
        "id": "r-1",
        "timing": "during_execution",
        "task_description": "Clean up",
        "output": '{"path": "/tmp/x"}',
        "prompt": "Delete?",
        "tool_name": "delete_file",
        "timeout_seconds": 90.0,
        "on_timeout": "fail",
    }
    assert json.loads(encode_request(request)) == request_to_json(request)


def test_zero_timeout_is_sent_as_zero_seconds() -> None:
    request = ReviewRequest(timing="after_execution", timeout=0)  # type: ignore[arg-type]
    assert request_to_json(request)["timeout_seconds"] == 0


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"decision": "continue"}, Continue()),
        ({"decision": "CONTINUE", "reason": None, "extra": 1}, Continue()),
        ({"decision": "edit", "revised_output": "new"}, Edit("new")),
        ({"decision": "edit", "revised_output": ""}, Edit("")),
        ({"decision": "exit_early"}, ExitEarly()),
        ({"decision": "exit_early", "reason": "no"}, ExitEarly("no")),
        ('{"decision": "continue"}', Continue()),
        (b'{"decision": "edit", "revised_output": "caf\xc3\xa9"}', Edit("caf\u00e9")),
    ],
)
def test_decision_from_json_accepts(data: Any, expected: ReviewDecision) -> None:
    assert decision_from_json(data) == expected


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("not json", "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        ("", "not valid JSON"),
        ("[]", "must be a JSON object"),
        ('"continue"', "must be a JSON object"),
        ({}, "no string 'decision' field"),
        ({"decision": None}, "no string 'decision' field"),
        ({"decision": True}, "no string 'decision' field"),
        ({"decision": "approve"}, "unknown decision 'approve'"),
        ({"decision": "yes"}, "unknown decision 'yes'"),
        ({"decision": "edit"}, "needs a string 'revised_output', got nothing"),
        ({"decision": "edit", "revised_output": 3}, "needs a string 'revised_output', got int"),
        ({"decision": "exit_early", "reason": 5}, "'reason' that is not a string"),
    ],
)
def test_decision_from_json_rejects_clearly(data: Any, message: str) -> None:
    with pytest.raises(ReviewProtocolError, match=message):
        decision_from_json(data)


@pytest.mark.parametrize("decision", [Continue(), Edit("x\ny"), ExitEarly("why"), ExitEarly()])
def test_decision_json_round_trips(decision: ReviewDecision) -> None:
    assert decision_from_json(json.dumps(decision_to_json(decision))) == decision


def test_the_request_every_review_service_receives_is_redacted() -> None:
    """A secret a model put into an output or a tool's arguments never reaches a webhook, the
    review server or the web console in clear: it reads ``***`` (a secret is leaving)."""
    from agentensemble.logging import register_secret

    register_secret("registered-review-secret-31")
    request = ReviewRequest(
        timing=ReviewTiming.DURING_EXECUTION,
        task_description="Deploy with sk-live-task0123456789abcd",
        output='{"dsn": "postgresql://app:pw-in-args-99@db/x", '
        '"note": "registered-review-secret-31"}',
        prompt="Approve Bearer abcdefgh12345678?",
        tool_name="deploy",
    )
    data = request_to_json(request)
    body = encode_request(request).decode()
    for text in (json.dumps(data), body):
        for secret in (
            "sk-live-task",
            "pw-in-args-99",
            "registered-review-secret-31",
            "abcdefgh1234",
        ):
            assert secret not in text
    assert data["output"] == '{"dsn": "postgresql://app:***@db/x", "note": "***"}'
    assert data["prompt"] == "Approve Bearer ***?"
