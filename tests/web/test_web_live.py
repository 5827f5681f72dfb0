"""The live stream: what a page receives over server-sent events as events are posted."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
from _web_support import api_client

from agentensemble_web import WebConsoleServer


def test_the_stream_carries_events_and_run_summaries(console: WebConsoleServer) -> None:
    received: list[dict[str, Any]] = []
    subscribed = threading.Event()
    done = threading.Event()

    def read() -> None:
        headers = {"Authorization": f"Bearer {console.token}"}
        with httpx.stream(
            "GET", f"{console.url}/api/stream", headers=headers, timeout=10.0
        ) as answer:
            assert answer.headers["content-type"].startswith("text/event-stream")
            subscribed.set()
            for line in answer.iter_lines():
                if line.startswith("data: "):
                    received.append(json.loads(line[6:]))
                    if len(received) == 2:
                        done.set()
                        return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert subscribed.wait(10)
    with api_client(console) as api:  # subscribed before the headers came: no event is missed
        api.post(
            "/api/events",
            json={"events": [{"type": "EnsembleStarted", "run_id": "r", "total_tasks": 2}]},
        )
    assert done.wait(10)
    reader.join(timeout=10)
    assert [m["kind"] for m in received] == ["event", "run"]
    assert received[1]["run"]["tasks_total"] == 2


def test_a_stopping_console_opens_no_new_stream() -> None:
    # a page reconnecting while the server stops would hold the shutdown until uvicorn cancels it
    from agentensemble_web._hub import Hub

    hub = Hub()
    first = hub.subscribe()
    assert first is not None
    hub.close_all()
    assert first.closed and first.queue.get_nowait() is None
    assert hub.subscribe() is None
