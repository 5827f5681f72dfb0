"""Traces with content in a real Arize Phoenix: ``phoenix serve`` started from its package on
127.0.0.1 (its own temporary working directory), our spans exported to it over OTLP/HTTP, and
read back through its REST API (``GET /v1/projects/<name>/spans``): the span kinds Phoenix
shows, the prompts, answers and tool calls, and a registered secret redacted on the way out.

Phoenix is large (about 850 MB with its dependencies, and it pins versions the project's own
environment does not take), so it is not in the ``dev`` extra: install it into a virtualenv of
its own, ``.phoenix`` in the clone (``make phoenix`` makes it), or point
``AGENTENSEMBLE_PHOENIX`` at its ``phoenix`` command; a ``phoenix`` on PATH or beside this
Python works too. Without one, the test skips in one line."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.logging import register_secret
from agentensemble.otel import OpenTelemetryListener
from agentensemble.testing import ScriptedChatModel, tool_call

STARTUP_SECONDS = 300  # measured 66 s on a loaded two-core machine
INGEST_SECONDS = 60
SECRET = "phoenix-registered-secret-5521"
PROJECT = "agentensemble-content"


def phoenix_command() -> str | None:
    """``AGENTENSEMBLE_PHOENIX``, else ``.phoenix/bin/phoenix`` in the clone (its own
    virtualenv), else a ``phoenix`` beside this Python or on PATH."""
    configured = os.environ.get("AGENTENSEMBLE_PHOENIX")
    if configured:
        return configured
    for candidate in (
        Path(__file__).resolve().parent.parent / ".phoenix" / "bin" / "phoenix",
        Path(sys.executable).with_name("phoenix"),
    ):
        if candidate.exists():
            return str(candidate)
    return shutil.which("phoenix")


PHOENIX = phoenix_command()
pytestmark = pytest.mark.skipif(
    PHOENIX is None,
    reason="Arize Phoenix not installed (make phoenix installs it; or set AGENTENSEMBLE_PHOENIX)",
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Phoenix server of this module's own; its base URL once it answers its health check."""
    assert PHOENIX is not None
    folder = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(folder),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",  # no tracking pixels: tests stay offline
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    }
    log = (folder / "phoenix.log").open("wb")
    process = subprocess.Popen(
        [PHOENIX, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=folder
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if process.poll() is not None:
                pytest.fail(f"phoenix serve exited ({process.returncode}): {tail(folder)}")
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"phoenix not healthy after {STARTUP_SECONDS} s: {tail(folder)}")
            time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
        log.close()


def tail(folder: Path) -> str:
    return (folder / "phoenix.log").read_text(errors="replace")[-2000:]


@tool
def lookup(city: str) -> str:
    """Weather of a city."""
    return f"Sunny in {city} (station key {SECRET})"


def export_a_run(base: str) -> None:
    """One run with a tool call, its spans sent to Phoenix over OTLP/HTTP and flushed."""
    exporter_module = pytest.importorskip(
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
        reason="opentelemetry-exporter-otlp-proto-http not installed",
    )
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    register_secret(SECRET)
    provider = TracerProvider(resource=Resource.create({"openinference.project.name": PROJECT}))
    exporter = exporter_module.OTLPSpanExporter(endpoint=f"{base}/v1/traces", timeout=30)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    model = ScriptedChatModel([tool_call("lookup", {"city": "Oslo"}), "Sunny in Oslo today"])
    agent = Agent(role="Forecaster", goal="Forecast the weather", tools=[lookup], llm=model)
    task = Task(description=f"Forecast Oslo; the API key is {SECRET}", agent=agent)
    listener = OpenTelemetryListener(provider, include_content=True)
    Ensemble(tasks=[task], listeners=[listener]).run()
    assert provider.force_flush(timeout_millis=30_000)
    provider.shutdown()


def spans_in(base: str, count: int) -> list[dict[str, Any]]:
    """The project's spans, read back once Phoenix has ingested ``count`` of them."""
    deadline = time.monotonic() + INGEST_SECONDS
    while True:
        response = httpx.get(f"{base}/v1/projects/{PROJECT}/spans", timeout=10)
        if response.status_code == 200:
            spans: list[dict[str, Any]] = response.json()["data"]
            if len(spans) >= count:
                return spans
        if time.monotonic() > deadline:
            pytest.fail(f"Phoenix holds {response.status_code} {response.text[:500]}")
        time.sleep(0.25)


@pytest.mark.timeout(STARTUP_SECONDS + INGEST_SECONDS + 60)  # Phoenix's start counts too
def test_phoenix_shows_the_prompts_answers_and_tool_calls_redacted(phoenix: str) -> None:
    export_a_run(phoenix)

    spans = spans_in(phoenix, 5)

    kinds = sorted((span["span_kind"], span["name"]) for span in spans)
    assert kinds == [
        ("AGENT", "invoke_agent Forecaster"),
        ("CHAIN", "invoke_workflow agentensemble"),
        ("LLM", "chat scripted"),
        ("LLM", "chat scripted"),
        ("TOOL", "execute_tool lookup"),
    ]
    by_name = {span["name"]: span["attributes"] for span in spans}
    tool_span = by_name["execute_tool lookup"]
    assert tool_span["tool.name"] == "lookup"
    assert json.loads(tool_span["input.value"]) == {"city": "Oslo"}
    assert tool_span["output.value"] == "Sunny in Oslo (station key ***)"
    chats = [span["attributes"] for span in spans if span["span_kind"] == "LLM"]
    answer = next(a for a in chats if a.get("output.value") == "Sunny in Oslo today")
    assert answer["llm.token_count.prompt"] > 0
    sent = json.loads(answer["gen_ai.input.messages"])
    assert [message["role"] for message in sent] == ["system", "user", "assistant", "tool"]
    assert "Forecast Oslo; the API key is ***" in sent[1]["parts"][0]["content"]
    assert by_name["invoke_agent Forecaster"]["output.value"] == "Sunny in Oslo today"
    exported = json.dumps(spans)
    assert SECRET not in exported  # in the prompt and in the tool result: redacted both times
