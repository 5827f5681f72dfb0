"""Human review behind a webhook, on one machine: approve a tool call and a report in a browser.

Run it with ``python examples/webhook_review.py``. It starts the reference review server
(``ReviewServer``) in this process on a free port of 127.0.0.1, prints the address of its review
page, and runs an agent whose ``delete_files`` tool (simulated: nothing on your disk is touched)
requires approval and whose report is reviewed after the task. Every review is POSTed, signed
with HMAC-SHA256, to the server by ``WebhookReviewHandler``; open the page and press Approve,
Edit or Exit. A review left undecided for ``--timeout`` seconds (default 300) counts as "no
answer": the call is rejected or the run stops, never approved.

Options:

- ``--auto-approve``: approve every review through the server's HTTP decision endpoint from a
  background thread, so the script finishes by itself (the tests use this). Listing and
  deciding need the server's token, as the page does.
- ``--url URL --secret S [--token T]``: use a review server you started yourself instead, e.g.
  ``python -m agentensemble_review.server --port 8765 --secret S`` and
  ``--url http://127.0.0.1:8765/reviews --secret S``; ``--token`` (printed by the server at
  start, in the page's address) is needed only with ``--auto-approve``.

With no API key it runs offline on a scripted model (and says so); with ``OPENAI_API_KEY`` set
it uses ``openai/gpt-4o-mini``, and ``AGENTENSEMBLE_MODEL`` names any litellm model. See
docs/review.md.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import threading
from datetime import timedelta
from urllib.parse import urlsplit

import httpx
from _janitor import cleanup_task, offline_model, print_outcome
from _model_choice import choose_model

from agentensemble import AgentEnsembleError, ChatModel, Ensemble
from agentensemble_review import ReviewServer, WebhookReviewHandler


def build(model: str | ChatModel, handler: WebhookReviewHandler, timeout: float) -> Ensemble:
    cleanup = cleanup_task(model, review_timeout=timedelta(seconds=timeout))
    return Ensemble(tasks=[cleanup], review_handler=handler)


class AutoApprover:
    """Approves every pending review through the server's HTTP API, until stopped.

    It does what a person does on the review page: list the reviews (``GET /reviews``), then
    post a decision for each pending one (``POST /reviews/<id>/decision``).
    """

    def __init__(self, base_url: str, token: str) -> None:
        self.base_url = base_url
        self.token = token
        self.approved: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="auto-approver", daemon=True)

    def __enter__(self) -> AutoApprover:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        auth = {"Authorization": f"Bearer {self.token}"}
        with httpx.Client(base_url=self.base_url, timeout=5.0, headers=auth) as client:
            while not self._stop.wait(0.1):  # ends when the run is over
                try:
                    reviews = client.get("/reviews").json()["reviews"]
                    for review in reviews:
                        if review["status"] == "pending":
                            self._approve(client, review)
                except httpx.HTTPError as exc:
                    print(f"[auto-approve] server not reachable: {exc}", flush=True)

    def _approve(self, client: httpx.Client, review: dict[str, object]) -> None:
        request = review["request"]
        assert isinstance(request, dict)
        answer = client.post(f"/reviews/{review['id']}/decision", json={"decision": "continue"})
        if answer.status_code == 200:
            tool_name = request.get("tool_name")
            what = f"tool call {tool_name}" if tool_name else "task output"
            self.approved.append(what)
            print(f"[auto-approve] approved the review of {what}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--auto-approve", action="store_true", help="approve every review")
    parser.add_argument("--url", help="webhook URL of a review server you started yourself")
    parser.add_argument("--secret", help="its secret (default: a random one for ours)")
    parser.add_argument("--token", default="", help="its page token (for --auto-approve)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per review")
    args = parser.parse_args(argv)

    model, banner = choose_model(offline_model())
    print(banner, flush=True)
    server: ReviewServer | None = None
    if args.url:
        webhook_url, secret, token = args.url, args.secret, args.token
        parts = urlsplit(args.url)
        base_url = page_url = f"{parts.scheme}://{parts.netloc}"
    else:
        secret = args.secret or secrets.token_hex(16)
        server = ReviewServer(port=0, secret=secret).start()
        webhook_url, base_url, page_url = server.reviews_url, server.url, server.page_url
        token = server.token
    print(f"Review page: {page_url}  (webhook: {webhook_url})", flush=True)
    if not args.auto_approve:
        print("Open the review page in a browser and decide each review there.", flush=True)

    handler = WebhookReviewHandler(
        webhook_url, secret=secret, timeout=timedelta(seconds=args.timeout)
    )
    ensemble = build(model, handler, args.timeout)
    try:
        if args.auto_approve:
            with AutoApprover(base_url, token):
                result = ensemble.run()
        else:
            result = ensemble.run()
    except AgentEnsembleError as exc:  # e.g. a wrong --secret: the server answers 401
        print(f"Run failed: {exc}", file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.stop()

    print_outcome(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
