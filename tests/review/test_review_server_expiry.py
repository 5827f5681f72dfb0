"""The reference server's reviews expire at (first received + the request's timeout).

After that a review can never be decided: asking about it answers 410, a decision for it is
refused (410) and never recorded, posting its id again does not reopen it, and the page shows it
as expired with no buttons. A client asking again about a review it already posted (a retry, a
durable run recovered in another process) gets the review held, never a new one; the same id
with another request is refused (409). The server's clock is a fake one here: no sleeping.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import httpx
import pytest
from _review_support import SECRET

from agentensemble_review import (
    Continue,
    OnTimeoutAction,
    Review,
    ReviewServer,
    ReviewTiming,
    sign,
)
from agentensemble_review._server_store import Record, Refusal, Store, timeout_of
from agentensemble_review.protocol import encode_request
from agentensemble_review.server import ReviewExpiredError


class Clock:
    """The server's monotonic clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(review_server: ReviewServer) -> Clock:
    fake = Clock()
    review_server.store.clock = fake
    return fake


@pytest.fixture
def client(review_server: ReviewServer) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {review_server.token}"}
    with httpx.Client(base_url=review_server.url, timeout=5, headers=headers) as http:
        yield http


def body(review_id: str = "run-1:1700000000000:3.0", timeout: float = 60, **fields: str) -> bytes:
    request = Review.required(timeout=timeout, on_timeout=OnTimeoutAction.EXIT_EARLY).to_request(
        timing=ReviewTiming.AFTER_EXECUTION,
        task_description=fields.get("task", "Draft the announcement"),
        output=fields.get("output", "We ship on Monday"),
    )
    return encode_request(request.model_copy(update={"id": review_id}))


def post(client: httpx.Client, content: bytes) -> httpx.Response:
    headers = {
        "Content-Type": "application/json",
        "X-AgentEnsemble-Signature": sign(content, SECRET),
    }
    return client.post("/reviews", content=content, headers=headers)


def decide(client: httpx.Client, review_id: str, decision: dict[str, str]) -> httpx.Response:
    return client.post(f"/reviews/{review_id}/decision", json=decision)


REVIEW = "run-1:1700000000000:3.0"


# -- asking again --------------------------------------------------------------------------------


def test_posting_a_pending_review_again_answers_the_same_review(
    review_server: ReviewServer, client: httpx.Client, clock: Clock
) -> None:
    assert post(client, body()).status_code == 202
    clock.now += 30
    again = post(client, body())
    assert again.status_code == 202
    assert again.headers["Location"] == "/reviews/run-1%3A1700000000000%3A3.0"
    assert [r.id for r in review_server.store.all()] == [REVIEW]
    clock.now += 29  # the expiry counts from the first post, not from the second
    assert client.get(f"/reviews/{REVIEW}").status_code == 202
    clock.now += 1
    assert client.get(f"/reviews/{REVIEW}").status_code == 410


def test_posting_a_decided_review_again_answers_its_decision(client: httpx.Client) -> None:
    post(client, body())
    assert decide(client, REVIEW, {"decision": "edit", "revised_output": "Tuesday"}).is_success
    again = post(client, body())
    assert again.status_code == 200
    assert again.json() == {"decision": "edit", "revised_output": "Tuesday"}


def test_another_request_under_a_held_id_is_refused_and_changes_nothing(
    review_server: ReviewServer, client: httpx.Client
) -> None:
    """A review id is predictable in a durable run: whoever posts another request under it first
    must not get the reviewer's decision about the real one (nor hand theirs to it)."""
    post(client, body(output="We ship on Monday"))
    forged = post(client, body(output="Wire 10,000 EUR to the attacker"))
    assert forged.status_code == 409
    assert "different review" in forged.json()["error"]
    [held] = review_server.store.all()
    assert held.request["output"] == "We ship on Monday"


# -- expiry --------------------------------------------------------------------------------------


def test_an_expired_review_answers_410_and_says_why(client: httpx.Client, clock: Clock) -> None:
    post(client, body(timeout=60))
    clock.now += 60
    gone = client.get(f"/reviews/{REVIEW}")
    assert gone.status_code == 410
    assert gone.json()["status"] == "expired"
    assert "timeout of 60 s passed with no decision" in gone.json()["error"]
    listed = client.get("/reviews").json()["reviews"]
    assert [r["status"] for r in listed] == ["expired"]


def test_a_late_decision_is_refused_and_never_recorded(
    review_server: ReviewServer, client: httpx.Client, clock: Clock
) -> None:
    post(client, body(timeout=60))
    clock.now += 61
    late = decide(client, REVIEW, {"decision": "continue"})
    assert late.status_code == 410
    assert "expired" in late.json()["error"]
    assert "not recorded" in late.json()["error"]
    held = review_server.store.get(REVIEW)
    assert held is not None
    assert held.decision is None
    with pytest.raises(ReviewExpiredError, match="expired"):
        review_server.decide(REVIEW, {"decision": "continue"})
    assert client.get(f"/reviews/{REVIEW}").status_code == 410  # still no decision to read


def test_posting_an_expired_review_again_does_not_reopen_it(
    review_server: ReviewServer, client: httpx.Client, clock: Clock
) -> None:
    post(client, body(timeout=60))
    clock.now += 61
    again = post(client, body(timeout=60))
    assert again.status_code == 410
    assert again.json()["status"] == "expired"
    assert review_server.pending() == []
    assert decide(client, REVIEW, {"decision": "continue"}).status_code == 410


def test_a_decision_made_in_time_still_answers_after_the_timeout(
    client: httpx.Client, clock: Clock
) -> None:
    post(client, body(timeout=60))
    clock.now += 59
    assert decide(client, REVIEW, {"decision": "continue"}).is_success
    clock.now += 3600
    assert client.get(f"/reviews/{REVIEW}").json() == {"decision": "continue"}
    assert post(client, body(timeout=60)).status_code == 200  # a recovered run gets it too


def test_a_review_without_a_time_limit_never_expires(client: httpx.Client, clock: Clock) -> None:
    post(client, body(timeout=0))
    clock.now += 10 * 365 * 86400
    assert client.get(f"/reviews/{REVIEW}").status_code == 202


def test_the_page_shows_an_expired_review_without_buttons(
    client: httpx.Client, clock: Clock
) -> None:
    post(client, body(timeout=60))
    clock.now += 15
    page = client.get("/").text
    assert "data-decision='continue'" in page
    assert "expires in 45 s (timeout 60 s)" in page
    clock.now += 45
    page = client.get("/").text
    assert "Pending reviews (0)" in page
    assert "Expired" in page
    assert "run-1:1700000000000:3.0" in page
    assert "data-decision=" not in page  # no button can decide it


def test_expired_reviews_free_their_clients_pending_slots() -> None:
    fake = Clock()
    store = Store(capacity=10, per_client=1, clock=fake)
    request = {"timeout_seconds": 5, "output": "x"}
    assert isinstance(store.add("a", request, "10.0.0.1"), Record)
    assert store.add("b", request, "10.0.0.1") is Refusal.CLIENT_FULL
    fake.now += 5  # "a" expired: it waits for nothing any more
    added = store.add("b", request, "10.0.0.1")
    assert isinstance(added, Record)
    pending = store.wait_for_pending(0)
    assert pending is not None
    assert pending.id == "b"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (60, 60.0),
        (0.5, 0.5),
        (0, None),  # wait forever
        (-5, None),
        (math.inf, None),
        (math.nan, None),
        (True, None),
        ("60", None),
        (None, None),
        ([60], None),
    ],
)
def test_only_a_finite_positive_number_is_a_timeout(given: object, expected: float | None) -> None:
    assert timeout_of({"timeout_seconds": given}) == expected


def test_a_hostile_timeout_over_http_means_no_expiry(client: httpx.Client, clock: Clock) -> None:
    content = b'{"id": "odd", "timeout_seconds": NaN, "output": "x"}'
    assert post(client, content).status_code == 202
    clock.now += 10**9
    assert client.get("/reviews/odd").status_code == 202


def test_an_expired_review_dropped_to_make_room_is_still_never_reopened() -> None:
    """A full store drops expired reviews first; their ids stay closed: a flood of new reviews
    cannot turn an expired one back into a pending one that someone could approve."""
    fake = Clock()
    store = Store(capacity=1, per_client=5, clock=fake)
    request = {"timeout_seconds": 5, "output": "x"}
    store.add("old", request, "10.0.0.1")
    fake.now += 5
    assert isinstance(store.add("new", {"output": "y"}, "10.0.0.2"), Record)  # "old" dropped
    assert store.get("old") is None

    assert store.add("old", request, "10.0.0.1") is Refusal.GONE
    assert "expired" in (store.gone("old") or "")
    with pytest.raises(ReviewExpiredError, match="expired"):
        store.decide("old", Continue())


def test_the_server_answers_410_for_an_expired_review_it_dropped(
    review_server: ReviewServer, client: httpx.Client, clock: Clock
) -> None:
    review_server.store = Store(capacity=1, clock=clock)
    post(client, body(timeout=60))
    clock.now += 60
    assert post(client, body(review_id="another", timeout=60)).status_code == 202
    assert client.get(f"/reviews/{REVIEW}").status_code == 410
    assert post(client, body(timeout=60)).status_code == 410
    assert decide(client, REVIEW, {"decision": "continue"}).status_code == 410
