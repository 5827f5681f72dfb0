"""The webhook wire format: the request payload, its signature, and the decision answer.

Request (POST body, UTF-8 JSON)::

    {"id": "...", "timing": "before_execution" | "during_execution" | "after_execution",
     "task_description": "...", "output": "...", "prompt": "..." | null,
     "tool_name": "..." | null, "timeout_seconds": 300.0 (0 = no limit),
     "on_timeout": "continue" | "exit_early" | "fail"}

Signature (only with a secret): header ``X-AgentEnsemble-Signature: sha256=<hex>``, the
HMAC-SHA256 of the exact body bytes keyed with the secret. Decision (a 200 answer)::

    {"decision": "continue" | "edit" | "exit_early", "revised_output": "...", "reason": "..."}

``revised_output`` is required for ``edit``; ``reason`` is optional for ``exit_early``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from agentensemble.errors import UntrustedInputError
from agentensemble.redaction import redact_text
from agentensemble.untrusted import parse_json
from agentensemble_review.errors import ReviewProtocolError
from agentensemble_review.models import Continue, Edit, ExitEarly, ReviewDecision, ReviewRequest

SIGNATURE_HEADER = "X-AgentEnsemble-Signature"
DECISIONS = ("continue", "edit", "exit_early")


def request_to_json(request: ReviewRequest) -> dict[str, Any]:
    """The JSON object a webhook (or the web console) receives for ``request``. Its texts pass
    the redaction policy: a secret a model put into an output or a tool's arguments shows as
    ``***``, which tells the reviewer one is leaving, and never reaches the reviewing service."""
    return {
        "id": request.id,
        "timing": request.timing.value,
        "task_description": redact_text(request.task_description),
        "output": redact_text(request.output),
        "prompt": None if request.prompt is None else redact_text(request.prompt),
        "tool_name": request.tool_name,
        "timeout_seconds": request.timeout.total_seconds(),
        "on_timeout": request.on_timeout.value,
    }


def encode_request(request: ReviewRequest) -> bytes:
    """The exact body bytes that are sent (and signed): UTF-8 JSON. Text UTF-8 cannot encode
    (a lone surrogate from the model's JSON) is sent as JSON ``\\uXXXX`` escapes instead."""
    data = request_to_json(request)
    try:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        return json.dumps(data, ensure_ascii=True, separators=(",", ":")).encode()


def sign(body: bytes, secret: str) -> str:
    """The signature header value for ``body``: ``sha256=<hex of HMAC-SHA256(secret, body)>``."""
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify_signature(body: bytes, header: str | None, secret: str) -> bool:
    """True iff ``header`` is the valid signature of the exact ``body`` bytes under ``secret``.

    For receivers: pass the raw request body (before any JSON parsing) and the value of the
    ``X-AgentEnsemble-Signature`` header. Compares in constant time; a missing or malformed
    header, or an empty secret, is simply not valid.
    """
    if not header or not secret:
        return False
    expected = sign(body, secret)
    return hmac.compare_digest(expected.encode("ascii"), header.strip().lower().encode("utf-8"))


def decision_to_json(decision: ReviewDecision) -> dict[str, Any]:
    """The JSON answer a webhook gives for ``decision``."""
    if isinstance(decision, Edit):
        return {"decision": "edit", "revised_output": decision.revised_output}
    if isinstance(decision, ExitEarly):
        return {"decision": "exit_early", "reason": decision.reason}
    return {"decision": "continue"}


def decision_from_json(data: object) -> ReviewDecision:
    """Parse a webhook's decision (a dict, or JSON text / bytes); ``ReviewProtocolError`` naming
    what is wrong otherwise. Never guesses: anything unclear is an error, not approval."""
    if isinstance(data, bytes | bytearray):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ReviewProtocolError(f"decision body is not UTF-8: {exc}") from exc
    if isinstance(data, str):
        try:
            data = parse_json(data, what="decision body")
        except UntrustedInputError as exc:
            shown = f": {_snippet(data)}" if exc.reason.startswith("not valid JSON") else ""
            raise ReviewProtocolError(f"{exc}{shown}") from exc
    if not isinstance(data, dict):
        raise ReviewProtocolError(
            f'decision must be a JSON object like {{"decision": "continue"}}, got {_snippet(data)}'
        )
    kind = data.get("decision")
    if not isinstance(kind, str):
        raise ReviewProtocolError(
            f"decision object has no string 'decision' field (one of {', '.join(DECISIONS)}): "
            f"{_snippet(data)}"
        )
    kind = kind.strip().lower()
    if kind == "continue":
        return Continue()
    if kind == "edit":
        revised = data.get("revised_output")
        if not isinstance(revised, str):
            raise ReviewProtocolError(
                "decision 'edit' needs a string 'revised_output', got "
                + ("nothing" if revised is None else type(revised).__name__)
            )
        return Edit(revised)
    if kind == "exit_early":
        reason = data.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise ReviewProtocolError(
                f"decision 'exit_early' has a 'reason' that is not a string: {_snippet(reason)}"
            )
        return ExitEarly(reason)
    raise ReviewProtocolError(
        f"unknown decision {data.get('decision')!r}; expected one of {', '.join(DECISIONS)}"
    )


def _snippet(value: object, limit: int = 200) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


__all__ = [
    "DECISIONS",
    "SIGNATURE_HEADER",
    "decision_from_json",
    "decision_to_json",
    "encode_request",
    "request_to_json",
    "sign",
    "verify_signature",
]
