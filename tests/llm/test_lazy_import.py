"""litellm stays out of ``import agentensemble`` and, once loaded, stays quiet and offline.

Each check runs in a fresh interpreter, since litellm can be imported only once per process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
E2E = ROOT / "tests" / "e2e"


def run_python(code: str, env_updates: dict[str, str | None] | None = None) -> tuple[str, str]:
    """Run ``code`` in a fresh interpreter; return (stdout, stderr). Fails on a non-zero exit."""
    env = dict(os.environ)
    for name in ("LITELLM_LOCAL_MODEL_COST_MAP", "LITELLM_LOG", "DISABLE_AIOHTTP_TRANSPORT"):
        env.pop(name, None)
    for name, value in (env_updates or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(E2E)])
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout, result.stderr


def test_import_agentensemble_does_not_import_litellm() -> None:
    out, _ = run_python(
        """
        import json, sys
        import agentensemble
        from agentensemble import LLM
        model = LLM("openai/gpt-4o-mini", api_key="sk-abc123456")
        repr(model)
        model.request_kwargs([{"role": "user", "content": "hi"}])
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("litellm", "openai"))
        print(json.dumps(heavy))
        """
    )
    assert json.loads(out) == []


FIRST_CALLS = """
    import asyncio, json, logging, os, sys
    from openai_server import OpenAIServer, Fault
    from agentensemble.errors import LLMError
    from agentensemble.llm import LLM, RetryPolicy
    from agentensemble.llm._litellm import load_litellm

    fast = RetryPolicy(max_attempts=3, initial_backoff=0.001, max_backoff=0.002, jitter=0)
    tool = {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}

    async def main(server):
        llm = LLM("openai/test-model", api_base=server.base_url, api_key="sk-test-abcdef123456",
                  retry_policy=fast, timeout=10)
        server.push_text("hello")
        server.push_tool_calls([("add", '{"a": 1}')])
        server.push(Fault.http(500), Fault(kind="drop"))
        server.push_text("recovered")
        server.push_fault(401)
        first = await llm.complete([{"role": "user", "content": "hi"}])
        second = await llm.complete([{"role": "user", "content": "hi"}], tools=[tool])
        third = await llm.complete([{"role": "user", "content": "hi"}])
        try:
            await llm.complete([{"role": "user", "content": "hi"}])
        except LLMError as exc:
            failed = exc.status_code
        return first.content, second.tool_calls[0].arguments, third.content, failed

    with OpenAIServer() as server:
        result = asyncio.run(main(server))
    litellm = load_litellm()
    # litellm's own loggers must print nothing when the application configured no logging
    logging.getLogger("LiteLLM").warning("should not be printed")
    logging.getLogger("LiteLLM Router").error("should not be printed either")
    report = {
        "result": list(result),
        "env": os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP"),
        "suppress_debug_info": litellm.suppress_debug_info,
        "aiohttp_disabled": litellm.disable_aiohttp_transport,
        "httpx_level": logging.getLogger("httpx").level,
    }
    with open(os.environ["REPORT_PATH"], "w") as f:
        json.dump(report, f)
"""


def test_first_calls_set_local_cost_map_and_print_nothing(tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    out, err = run_python(FIRST_CALLS, {"REPORT_PATH": str(report_path)})
    assert out == ""
    assert err == ""
    report = json.loads(report_path.read_text())
    assert report["result"] == ["hello", '{"a": 1}', "recovered", 401]
    assert report["env"] == "True"
    assert report["suppress_debug_info"] is True
    assert report["aiohttp_disabled"] is True
    assert report["httpx_level"] == 0  # litellm forces WARNING; we give the level back


def test_user_settings_are_respected(tmp_path: Path) -> None:
    out, _ = run_python(
        """
        import json, logging, os
        logging.getLogger("httpx").setLevel(logging.DEBUG)
        from agentensemble.llm._litellm import load_litellm
        litellm = load_litellm()
        print(json.dumps([os.environ["LITELLM_LOCAL_MODEL_COST_MAP"],
                          logging.getLogger("httpx").level]))
        """,
        {"LITELLM_LOCAL_MODEL_COST_MAP": "true"},
    )
    assert json.loads(out) == ["true", 10]


def test_litellm_records_reach_configured_logging_once() -> None:
    _, err = run_python(
        """
        import logging, threading
        logging.basicConfig(level=logging.INFO, format="%(name)s|%(levelname)s|%(message)s")
        from agentensemble.llm._litellm import load_litellm
        modules = []
        threads = [threading.Thread(target=lambda: modules.append(load_litellm()))
                   for _ in range(4)]
        for t in threads: t.start()
        for t in threads: t.join(60)
        assert len(modules) == 4 and all(m is modules[0] for m in modules)
        logging.getLogger("LiteLLM").warning("visible once")
        logging.getLogger("LiteLLM").debug("litellm chatter stays hidden")
        """
    )
    assert err.count("LiteLLM|WARNING|visible once") == 1
    assert "chatter" not in err
