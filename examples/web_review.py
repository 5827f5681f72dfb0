"""Watch a run and decide its reviews in the web console, on one machine.

Run it with ``python examples/web_review.py`` (needs ``pip install "agentensemble-py[web]"``). It
starts the web console in this process on a free port of 127.0.0.1, prints the address to open
(with its login token), and runs an agent whose ``delete_files`` tool (simulated: nothing on
your disk is touched) needs approval and whose report is reviewed after the task. The run shows
up live in the console; decide each review there with Approve, Edit or Reject / Exit early. A
review left undecided for ``--timeout`` seconds (default 300) is "no answer": the call is
rejected or the run stops, never approved.

Options:

- ``--auto-approve``: approve every review over the console's HTTP API from a background thread,
  so the script finishes by itself (the tests use this).
- ``--url URL --token T``: report to a console you started yourself with ``agentensemble serve``
  (the token is the one in the address it printed) instead of starting one here.

With no API key it runs offline on a scripted model (and says so); with ``OPENAI_API_KEY`` set it
uses ``openai/gpt-4o-mini``, and ``AGENTENSEMBLE_MODEL`` names any litellm model. See
docs/web-console.md.
"""

from __future__ import annotations

import argparse
import contextlib
import threading
from datetime import timedelta

import httpx
from _janitor import cleanup_task, offline_model, print_outcome
from _model_choice import choose_model

from agentensemble import Ensemble
from agentensemble_web import WebConsole, WebConsoleServer, WebReviewHandler


class AutoApprover:
    """Approves every pending review through the console's API, as a reviewer's page would."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
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
        with httpx.Client(base_url=self.url, timeout=5.0, headers=auth) as client:
            while not self._stop.wait(0.1):  # ends when the run is over
                try:
                    for review in client.get("/api/reviews").json()["reviews"]:
                        if review["status"] == "pending":
                            self._approve(client, review)
                except httpx.HTTPError as exc:
                    print(f"[auto-approve] console not reachable: {exc}", flush=True)

    def _approve(self, client: httpx.Client, review: dict[str, object]) -> None:
        request = review["request"]
        assert isinstance(request, dict)
        answer = client.post(f"/api/reviews/{review['id']}/decision", json={"decision": "continue"})
        if answer.status_code == 200:
            tool_name = request.get("tool_name")
            what = f"tool call {tool_name}" if tool_name else "task output"
            print(f"[auto-approve] approved the review of {what}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--auto-approve", action="store_true", help="approve every review")
    parser.add_argument("--url", help="a console started with `agentensemble serve`")
    parser.add_argument("--token", default="", help="that console's token")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per review")
    args = parser.parse_args(argv)

    model, banner = choose_model(offline_model())
    print(banner, flush=True)
    server: WebConsoleServer | None = None
    if args.url:
        url, token = args.url.rstrip("/"), args.token
        print(f"Reporting to the console at {url}", flush=True)
    else:
        server = WebConsoleServer(port=0).start()
        url, token = server.url, server.token
        print(f"Web console: {server.login_url}", flush=True)
    if not args.auto_approve:
        print("Open the console in a browser and decide each review there.", flush=True)

    listener = WebConsole(url, token)
    ensemble = Ensemble(
        tasks=[cleanup_task(model, review_timeout=timedelta(seconds=args.timeout))],
        listeners=[listener],
        review_handler=WebReviewHandler(url, token),
    )
    try:
        if args.auto_approve:
            with AutoApprover(url, token):
                result = ensemble.run()
        else:
            result = ensemble.run()
        listener.flush(5.0)
        print_outcome(result)
        if server is not None and not args.auto_approve:
            with contextlib.suppress(KeyboardInterrupt, EOFError):
                input("\nThe run is over; the console stays up until you press Enter. ")
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
