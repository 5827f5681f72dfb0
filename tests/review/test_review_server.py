"""The reference review server over real HTTP: the webhook endpoints, the page, the CLI."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import httpx
import pytest
from _review_support import PYTHON, REPO_ROOT, SECRET, subprocess_env

from agentensemble_review import (
    Continue,
    Edit,
    ExitEarly,
    ReviewRequest,
    ReviewServer,
    ReviewTiming,
    sign,
)
from agentensemble_review.protocol import encode_request


def review_body(**fields: object) -> bytes:
    return encode_request(
        ReviewRequest(
            timing=ReviewTiming.AFTER_EXECUTION,
            task_description=str(fields.get("task", "Write the summary")),
            output=str(fields.get("output", "The summary.")),
            prompt="Good enough?",
            id=str(fields.get("id", "r-1")),
        )
    )


@pytest.fixture
def client(review_server: ReviewServer) -> Iterator[httpx.Client]:
    """A client holding the server's token, as the review page does."""
    headers = {
        "Authorization": f"Bearer {review_server.token}",
        "Content-Type": "application/json",
    }
    with httpx.Client(base_url=review_server.url, timeout=5, headers=headers) as http:
        yield http


def post_review(client: httpx.Client, body: bytes, secret: str | None = SECRET) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if secret is not None:
        headers["X-AgentEnsemble-Signature"] = sign(body, secret)
    return client.post("/reviews", content=body, headers=headers)


def test_signed_review_is_stored_and_answered_202_with_location(
    review_server: ReviewServer, client: httpx.Client
) -> None:
    response = post_review(client, review_body())
    assert response.status_code == 202
    assert response.headers["Location"] == "/reviews/r-1"
    assert response.json() == {"id": "r-1", "status": "pending"}
    assert client.get("/reviews/r-1").status_code == 202
    assert review_server.pending()[0]["task_description"] == "Write the summary"


@pytest.mark.parametrize("secret", [None, "wrong"])
def test_unsigned_or_badly_signed_reviews_get_401(
    review_server: ReviewServer, client: httpx.Client, secret: str | None
) -> None:
    response = post_review(client, review_body(), secret=secret)
    assert response.status_code == 401
    assert "X-AgentEnsemble-Signature" in response.json()["error"]
    assert review_server.pending() == []


def test_a_signature_of_other_bytes_is_rejected(client: httpx.Client) -> None:
    body = review_body()
    headers = {"X-AgentEnsemble-Signature": sign(body + b" ", SECRET)}
    assert client.post("/reviews", content=body, headers=headers).status_code == 401


def test_without_a_secret_the_server_accepts_unsigned_reviews() -> None:
    with ReviewServer(port=0) as server, httpx.Client(base_url=server.url) as http:
        assert post_review(http, review_body(), secret=None).status_code == 202


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        ({"decision": "continue"}, {"decision": "continue"}),
        ({"decision": "exit_early", "reason": None}, {"decision": "exit_early", "reason": None}),
        ({"decision": "exit_early", "reason": "no"}, {"decision": "exit_early", "reason": "no"}),
        (
            {"decision": "edit", "revised_output": "line 1\nline 2"},
            {"decision": "edit", "revised_output": "line 1\nline 2"},
        ),
    ],
)
def test_page_buttons_post_decision_json(
    client: httpx.Client, decision: dict[str, object], expected: dict[str, object]
) -> None:
    post_review(client, review_body())
    assert client.post("/reviews/r-1/decision", json=decision).status_code == 200
    assert client.get("/reviews/r-1").json() == expected


def test_decision_by_json(client: httpx.Client) -> None:
    post_review(client, review_body())
    response = client.post("/reviews/r-1/decision", json={"decision": "exit_early", "reason": "r"})
    assert response.status_code == 200
    assert client.get("/reviews/r-1").json() == {"decision": "exit_early", "reason": "r"}


def test_bad_decisions_are_refused(client: httpx.Client) -> None:
    post_review(client, review_body())
    bad = client.post("/reviews/r-1/decision", json={"decision": "approve"})
    assert bad.status_code == 400
    assert "unknown decision 'approve'" in bad.json()["error"]
    assert client.post("/reviews/r-1/decision", json={"decision": "edit"}).status_code == 400
    assert client.post("/reviews/nope/decision", json={"decision": "continue"}).status_code == 404
    assert client.post("/reviews/r-1/decision", json={"decision": "continue"}).status_code == 200
    second = client.post("/reviews/r-1/decision", json={"decision": "continue"})
    assert second.status_code == 409


def test_a_retried_post_is_idempotent(review_server: ReviewServer, client: httpx.Client) -> None:
    body = review_body()
    assert post_review(client, body).status_code == 202
    assert post_review(client, body).status_code == 202
    assert len(review_server.store.all()) == 1
    review_server.decide("r-1", Continue())
    again = post_review(client, body)
    assert (again.status_code, again.json()) == (200, {"decision": "continue"})


@pytest.mark.parametrize(
    ("body", "status"),
    [(b"not json", 400), (b"[1, 2]", 400), (b'{"id": 5}', 400)],
)
def test_malformed_reviews_get_400(client: httpx.Client, body: bytes, status: int) -> None:
    assert post_review(client, body).status_code == status


def test_unknown_paths_and_ids_get_404(client: httpx.Client) -> None:
    assert client.get("/reviews/missing").status_code == 404
    assert client.get("/nothing/here").status_code == 404
    assert client.post("/elsewhere", content=b"{}").status_code == 404


def test_page_lists_pending_reviews_with_buttons_and_escapes_them(client: httpx.Client) -> None:
    empty = client.get("/")
    assert "Nothing to review yet" in empty.text
    post_review(client, review_body(task="<script>alert(1)</script>", output="a < b & c"))
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["Content-Type"].startswith("text/html")
    assert "<script>alert" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "a &lt; b &amp; c" in page.text
    assert "data-id='r-1'" in page.text
    for button in (
        "data-decision='continue'>Approve",
        "data-decision='edit'>Edit",
        "data-decision='exit_early'>Exit",
    ):
        assert button in page.text
    assert "<textarea name='revised_output'>" in page.text
    assert "<form" not in page.text  # decisions go out as JSON with the token, never as a form


def test_review_list_as_json(review_server: ReviewServer, client: httpx.Client) -> None:
    post_review(client, review_body(id="a"))
    post_review(client, review_body(id="b"))
    review_server.decide("a", {"decision": "edit", "revised_output": "z"})
    reviews = client.get("/reviews").json()["reviews"]
    assert [(r["id"], r["status"]) for r in reviews] == [("a", "decided"), ("b", "pending")]
    assert reviews[0]["decision"] == {"decision": "edit", "revised_output": "z"}


def test_programmatic_decide_and_wait(review_server: ReviewServer, client: httpx.Client) -> None:
    with pytest.raises(TimeoutError):
        review_server.wait_for_pending(timeout=0.1)
    post_review(client, review_body())
    assert review_server.wait_for_pending(timeout=1)["id"] == "r-1"
    review_server.decide("r-1", ExitEarly("stop"))
    with pytest.raises(ValueError, match="already decided"):
        review_server.decide("r-1", Edit("late"))
    with pytest.raises(KeyError):
        review_server.decide("nope", Continue())


def test_server_repr_hides_the_secret(review_server: ReviewServer) -> None:
    assert SECRET not in repr(review_server)
    assert "secret='***'" in repr(review_server)


def test_stop_frees_the_port() -> None:
    server = ReviewServer(port=0).start()
    port = server.port
    server.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
    ReviewServer(port=port).start().stop()  # the port can be bound again


def test_command_line_server() -> None:
    proc = subprocess.Popen(
        [PYTHON, "-m", "agentensemble_review.server", "--port", "0", "--secret", "cli-secret"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env=subprocess_env(),
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # printed once listening
        assert first.startswith("Review server on http://127.0.0.1:"), first
        base = first.split()[3]
        assert proc.stdout.readline().startswith("Webhook URL: ")
        page_line = proc.stdout.readline()
        assert f"{base}/?token=" in page_line, page_line
        token = page_line.rsplit("?token=", 1)[1].strip()
        body = review_body(id="cli-1")
        auth = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, timeout=5) as http:
            created = http.post(
                "/reviews",
                content=body,
                headers={
                    "X-AgentEnsemble-Signature": sign(body, "cli-secret"),
                    "Content-Type": "application/json",
                },
            )
            assert created.status_code == 202
            assert http.get("/").status_code == 401  # no token
            assert "Write the summary" in http.get(f"/?token={token}").text
            json_type = {"Content-Type": "application/json"}
            assert http.post("/reviews", content=body, headers=json_type).status_code == 401
            http.post("/reviews/cli-1/decision", json={"decision": "continue"}, headers=auth)
            assert http.get("/reviews/cli-1").json() == {"decision": "continue"}
    finally:
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate(timeout=10)
    assert "RuntimeWarning" not in err
    assert "cli-secret" not in err  # request lines are logged, never headers
    assert token not in err
    assert "POST /reviews" in err


def test_command_line_help() -> None:
    done = subprocess.run(
        [PYTHON, "-m", "agentensemble_review.server", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO_ROOT,
        env=subprocess_env(),
    )
    assert done.returncode == 0
    assert "--secret" in done.stdout and "--port" in done.stdout


def test_many_concurrent_reviews_round_trip(review_server: ReviewServer) -> None:
    with httpx.Client(base_url=review_server.url, timeout=5) as http:
        for index in range(20):
            assert post_review(http, review_body(id=f"r{index}")).status_code == 202
        for index in range(20):
            review_server.decide(f"r{index}", Edit(str(index)))
        answers = [http.get(f"/reviews/r{index}").json() for index in range(20)]
    assert [a["revised_output"] for a in answers] == [str(i) for i in range(20)]
    assert json.dumps(answers)


def test_a_secret_in_a_request_from_any_sender_is_shown_redacted(
    client: httpx.Client,
) -> None:
    """A sender that does not redact (another framework, a script) posts a tool call with a
    credential in it: the listing and the page show ``***``."""
    body = json.dumps(
        {
            "id": "leaky",
            "timing": "during_execution",
            "task_description": "Deploy",
            "output": '{"url": "redis://:R3dis-pass-771@cache:6379"}',
            "prompt": "Run it?",
            "tool_name": "deploy",
            "timeout_seconds": 60,
            "on_timeout": "exit_early",
        }
    ).encode()
    assert post_review(client, body).status_code == 202
    listing = client.get("/reviews").text
    page = client.get("/", headers={"Accept": "text/html"}).text
    for shown in (listing, page):
        assert "R3dis-pass-771" not in shown
    assert (
        "redis://:***@cache:6379"
        in client.get("/reviews").json()["reviews"][0]["request"]["output"]
    )


@pytest.mark.parametrize("error", [ConnectionResetError(104, "reset"), BrokenPipeError(32, "pipe")])
def test_a_client_hanging_up_prints_no_traceback(
    review_server: ReviewServer, capsys: pytest.CaptureFixture[str], error: OSError
) -> None:
    # a durable worker killed while it polls its review resets the connection: part of the story
    httpd = review_server._httpd
    assert httpd is not None
    try:
        raise error
    except OSError:
        httpd.handle_error(None, ("127.0.0.1", 1))
    assert capsys.readouterr().err == ""


def test_a_real_bug_in_a_request_still_prints_its_traceback(
    review_server: ReviewServer, capsys: pytest.CaptureFixture[str]
) -> None:
    httpd = review_server._httpd
    assert httpd is not None
    try:
        raise KeyError("a bug")
    except KeyError:
        httpd.handle_error(None, ("127.0.0.1", 1))
    assert "KeyError: 'a bug'" in capsys.readouterr().err
