"""The reference ReviewServer against hostile HTTP requests: what any web page open in the
reviewer's browser (or any local process) could send. Each request is refused with the right
status and changes nothing; every answer forbids framing."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from agentensemble_review import ReviewRequest, ReviewServer, ReviewTiming
from agentensemble_review.protocol import encode_request
from agentensemble_review.server import MAX_BODY_BYTES

TOKEN = "page-token-for-tests-0001"


def review_body(review_id: str) -> bytes:
    return encode_request(
        ReviewRequest(
            timing=ReviewTiming.DURING_EXECUTION,
            task_description="Pay the invoice",
            output='{"to": "alice", "amount": 10}',
            tool_name="transfer",
            id=review_id,
        )
    )


@pytest.fixture
def server() -> Iterator[ReviewServer]:
    """No secret (the worst case: anyone may post reviews), one review pending."""
    with ReviewServer(port=0, token=TOKEN) as running:
        created = httpx.post(
            running.reviews_url,
            content=review_body("r-1"),
            headers={"Content-Type": "application/json"},
            timeout=5,
        )
        assert created.status_code == 202
        yield running


def state(server: ReviewServer) -> list[tuple[str, str]]:
    return [(r.id, "pending" if r.decision is None else "decided") for r in server.store.all()]


JSON = {"Content-Type": "application/json"}
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DECIDE = "/reviews/r-1/decision"
APPROVE = b'{"decision": "continue"}'

HOSTILE_REQUESTS = [
    # (method, path, headers, body, status)
    pytest.param("GET", "/reviews", {**AUTH, "Host": "evil.example"}, b"", 403, id="rebind-list"),
    pytest.param(
        "GET", f"/?token={TOKEN}", {"Host": "evil.example:80"}, b"", 403, id="rebind-page"
    ),
    pytest.param(
        "POST", DECIDE, {**AUTH, **JSON, "Host": "attacker.test"}, APPROVE, 403, id="rebind-decide"
    ),
    pytest.param(
        "POST",
        DECIDE,
        {**AUTH, **JSON, "Origin": "http://evil.example"},
        APPROVE,
        403,
        id="foreign-origin",
    ),
    pytest.param(
        "POST", DECIDE, {**AUTH, **JSON, "Origin": "null"}, APPROVE, 403, id="null-origin"
    ),
    pytest.param(
        "POST",
        DECIDE,
        {**AUTH, **JSON, "Origin": "http://127.0.0.1:1"},
        APPROVE,
        403,
        id="loopback-other-port-origin",
    ),
    pytest.param(
        "POST",
        DECIDE,
        {**AUTH, **JSON, "Sec-Fetch-Site": "cross-site"},
        APPROVE,
        403,
        id="cross-site-fetch",
    ),
    pytest.param(
        "POST", DECIDE, {**AUTH, "Content-Type": "text/plain"}, APPROVE, 415, id="text-plain-body"
    ),
    pytest.param(
        "POST",
        DECIDE,
        {**AUTH, "Content-Type": "application/x-www-form-urlencoded"},
        b"decision=continue",
        415,
        id="form-body",
    ),
    pytest.param("POST", DECIDE, JSON, APPROVE, 401, id="decide-without-token"),
    pytest.param(
        "POST",
        DECIDE,
        {**JSON, "Authorization": "Bearer wrong-token"},
        APPROVE,
        401,
        id="decide-wrong-token",
    ),
    pytest.param(
        "POST", f"{DECIDE}?token=wrong", JSON, APPROVE, 401, id="decide-wrong-query-token"
    ),
    pytest.param("GET", "/reviews", {}, b"", 401, id="list-without-token"),
    pytest.param("GET", "/", {}, b"", 401, id="page-without-token"),
    pytest.param(
        "POST",
        "/reviews",
        {"Content-Type": "text/plain"},
        review_body("junk"),
        415,
        id="create-text-plain",
    ),
    pytest.param(
        "POST",
        "/reviews",
        {**JSON, "Origin": "http://evil.example"},
        review_body("junk"),
        403,
        id="create-foreign-origin",
    ),
    pytest.param(
        "POST",
        "/reviews",
        JSON,
        b'{"id": "junk", "pad": "' + b"x" * MAX_BODY_BYTES + b'"}',
        413,
        id="create-oversized",
    ),
    pytest.param("POST", DECIDE, {**AUTH, **JSON}, b"[" * 100_000, 400, id="decide-deep-json"),
]


@pytest.mark.parametrize(("method", "path", "headers", "body", "status"), HOSTILE_REQUESTS)
def test_hostile_requests_are_refused_and_change_nothing(
    server: ReviewServer,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes,
    status: int,
) -> None:
    before = state(server)
    with httpx.Client(base_url=server.url, timeout=10) as http:
        answer = http.request(method, path, headers=headers, content=body or None)
    assert answer.status_code == status, answer.text
    assert state(server) == before == [("r-1", "pending")]
    assert answer.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]
    assert TOKEN not in answer.text


GOOD_REQUESTS = [
    pytest.param("GET", f"/?token={TOKEN}", {}, id="page-with-token"),
    pytest.param("GET", "/reviews", AUTH, id="list-with-token"),
    pytest.param("GET", "/reviews", {**AUTH, "Host": "localhost"}, id="localhost-name"),
    pytest.param("GET", "/reviews/r-1", {}, id="poll-needs-no-token"),
]


@pytest.mark.parametrize(("method", "path", "headers"), GOOD_REQUESTS)
def test_the_page_and_the_webhook_keep_working(
    server: ReviewServer, method: str, path: str, headers: dict[str, str]
) -> None:
    with httpx.Client(base_url=server.url, timeout=5) as http:
        answer = http.request(method, path, headers=headers)
    assert answer.status_code in (200, 202)
    assert answer.headers["X-Frame-Options"] == "DENY"


def test_a_same_origin_decision_from_the_page_is_accepted(server: ReviewServer) -> None:
    origin = {"Origin": server.url, "Sec-Fetch-Site": "same-origin"}
    with httpx.Client(base_url=server.url, timeout=5) as http:
        answer = http.post(DECIDE, headers={**AUTH, **JSON, **origin}, content=APPROVE)
    assert answer.status_code == 200
    assert state(server) == [("r-1", "decided")]


def test_the_page_carries_a_nonce_csp_and_no_inline_handlers(server: ReviewServer) -> None:
    page = httpx.get(server.page_url, timeout=5)
    csp = page.headers["Content-Security-Policy"]
    assert "script-src 'nonce-" in csp and "frame-ancestors 'none'" in csp
    assert "form-action 'none'" in csp
    assert "onclick" not in page.text and "<form" not in page.text


def test_a_flood_from_one_client_cannot_starve_another() -> None:
    with ReviewServer(port=0, token=TOKEN, max_pending_per_client=5) as running:
        flooder = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=5)
        with flooder:
            statuses = [
                flooder.post(
                    running.reviews_url, content=review_body(f"junk-{i}"), headers=JSON
                ).status_code
                for i in range(12)
            ]
        assert statuses == [202] * 5 + [429] * 7
        real = httpx.post(running.reviews_url, content=review_body("real"), headers=JSON, timeout=5)
        assert real.status_code == 202
        assert running.store.get("real") is not None


def test_a_random_token_is_made_and_never_shown_in_repr() -> None:
    server = ReviewServer(port=0)
    assert server.token not in repr(server)
    assert server.page_url.endswith(f"/?token={server.token}")
    assert len(server.token) >= 24


@pytest.mark.parametrize("method", ["OPTIONS", "PUT", "DELETE"])
def test_other_methods_are_refused_and_forbid_framing_too(
    server: ReviewServer, method: str
) -> None:
    headers = {"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}
    answer = httpx.request(method, f"{server.url}/reviews/r-1/decision", headers=headers, timeout=5)
    assert answer.status_code == 501  # no CORS preflight is ever granted
    assert "Access-Control-Allow-Origin" not in answer.headers
    assert answer.headers["X-Frame-Options"] == "DENY"
    assert state(server) == [("r-1", "pending")]


def test_allowed_hosts_lets_a_deployer_name_the_server() -> None:
    with ReviewServer(port=0, token=TOKEN, allowed_hosts=["review.internal"]) as running:
        named = {**AUTH, "Host": f"review.internal:{running.port}"}
        assert httpx.get(f"{running.url}/reviews", headers=named, timeout=5).status_code == 200
        other = {**AUTH, "Host": f"other.internal:{running.port}"}
        assert httpx.get(f"{running.url}/reviews", headers=other, timeout=5).status_code == 403
