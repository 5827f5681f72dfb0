"""A thousand runs at once: N concurrent one-tool runs in one process against the aiohttp floor.

Usage: ``python benchmarks/concurrency.py [--runs 100 1000] [--delay 0.2] [--variants ...]
[--profile DIR] [--fresh N]``.

- **The server**: a recording OpenAI-compatible server in its own process (asyncio, 127.0.0.1,
  keep-alive), every answer after ``--delay`` seconds: a call of the job's one tool when the
  request's last message is not a tool result, the final text when it is. It counts what it got
  (``GET /stats``), so each variant is checked to have sent exactly two requests a run.
- **The job**: one agent with one tool (``lookup``), two model calls per run.
- **Variants**, each in a fresh child process (so peak memory is its own): ``ours`` (an
  ``Ensemble`` on ``LLM("openai/...")``, the openai lane, ``arun()`` N times at once); ``llm``
  (the same two model calls with ``LLM.complete``: the lane without the run around it);
  ``openai-sdk`` (the same two calls by hand with ``openai.AsyncOpenAI`` on its aiohttp transport,
  what the lane costs before our framework); ``floor`` (the same two requests over one bare
  ``aiohttp.ClientSession``: the least any Python client can spend); ``ours-bare`` (the
  ``ours`` run with its model a benchmark-only ``BareModel``: the same request body, retry
  policy and answer reading as the openai lane, posted over one bare ``aiohttp.ClientSession``
  instead of the ``openai`` package: our run without the client stack, never shipped);
  ``ours-offline`` (the same run on a model that sends nothing: it waits the answer delay and
  hands back a ready answer, so it is our run by itself, no HTTP; the server checks that it
  counted no request). Each child warms up with
  three sequential runs, then starts N runs at once and measures wall time, runs per second, its
  own CPU seconds per run (``time.process_time``: all threads) and peak RSS (VmHWM, reset after
  the warm-up): memory growth per concurrent run is (peak - RSS before) / N; and the part of
  that CPU spent in the garbage collector, with its collections (young / middle / full), which
  grow with what each run in flight keeps alive.
- Each variant's ratios to the floor are printed beside the targets of issue 44 (CPU per run
  <= 2x, throughput >= 0.5x, memory growth per run <= 2x), measured in one run, with
  ``uptime``'s load.
- ``--variants ... ours-frozen``: ``ours`` again with ``gc.freeze()`` after the warm-up (what
  docs/models.md advises a service that starts many runs), not in the default list.
- ``--variants ... litellm litellm-httpx``: ``ours`` on ``LLM(..., lane="litellm")``, on
  litellm's own aiohttp transport and on the httpx one our loader picks by default; not in the
  default list (slow at 1,000 at once).
- ``--profile DIR``: the ``ours``, ``ours-bare`` and ``ours-offline`` children at each size
  also write a cProfile of the measured part (``DIR/ours-N.txt``, top functions by own time,
  then by cumulative time).
- ``--fresh N``: first-answer time of a fresh process (spawn to exit, best of N after one
  discarded start): ``LLM.complete`` on the openai lane against the raw ``openai`` SDK.

Peers (PydanticAI, LangGraph, the OpenAI Agents SDK, CrewAI) are measured by
``benchmarks/peers.py`` in virtualenvs of their own; they are listed here as not installed
when those are absent. Every figure depends on the machine and its load: read ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared server, beside it
from _measure import measured
from _recording_server import RecordingServer

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("ours", "ours-bare", "ours-offline", "llm", "openai-sdk", "floor")
OFFLINE = "ours-offline"  # sends nothing: the server must count no request from it
DELAY_VARIABLE = "CONCURRENCY_BENCH_DELAY"  # the answer delay, for ours-offline's own waits
FROZEN = "ours-frozen"  # ours with gc.freeze() after the warm-up: the advice in docs/models.md
#: On request only: ours on litellm's lane, on litellm's own aiohttp transport and on the httpx
#: one our loader picks when ``DISABLE_AIOHTTP_TRANSPORT`` is unset (slow at 1,000 at once).
LITELLM = ("litellm", "litellm-httpx")
#: Variants ``--profile`` profiles.
PROFILED = ("ours", "ours-bare", OFFLINE, FROZEN)
TOOL = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look up a city's country.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
QUESTION = "Which country is Lyon in? Use the lookup tool."
TARGETS = {"cpu": 2.0, "throughput": 0.5, "memory": 2.0}


# -- the variants (each in a child process)


def _lookup(city: str) -> str:
    return "France" if city == "Lyon" else "unknown"


def _bench_llm(url: str, lane: str = "auto") -> Any:
    """The job's ``LLM``: the openai lane by default, ``lane="litellm"`` for litellm's."""
    sys.path.insert(0, str(ROOT))
    from agentensemble import LLM, RetryPolicy

    return LLM(
        "openai/test-model",
        api_base=url,
        api_key="sk-bench",
        timeout=600,
        retry_policy=RetryPolicy(max_attempts=1),
        lane=lane,  # type: ignore[arg-type]
    )


class BareModel:
    """A ChatModel for this benchmark only (never shipped: the house rule keeps the lane on the
    ``openai`` package): what ``LLM.complete`` does on the openai lane with the client stack
    (``openai`` + httpx + httpx-aiohttp) replaced by one bare ``aiohttp.ClientSession``.

    Same request body (``LLM.request_kwargs`` then the lane's ``build_request``), same retry
    policy and guard around the call, same reading of the answer (``aparse_json``, the lane's
    ``read_response`` and finish reasons): the difference from ``ours`` is the client stack.
    """

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.model = llm.model
        self._session: Any = None

    async def _post(self, request: Any) -> Any:
        import aiohttp

        from agentensemble.llm import _openai_client as lane
        from agentensemble.llm._messages import read_response
        from agentensemble.untrusted import aparse_json

        if self._session is None:  # made in the loop that uses it
            connector = aiohttp.TCPConnector(limit=lane.MAX_CONNECTIONS)
            self._session = aiohttp.ClientSession(connector=connector)
        headers = {
            "Authorization": f"Bearer {request.endpoint.api_key}",
            "Content-Type": "application/json",
        }
        url = request.endpoint.base_url + lane.CHAT_PATH
        # the bytes the SDK sends (httpx's compact JSON), so the server reads the same body
        body = json.dumps(request.body, ensure_ascii=False, separators=(",", ":")).encode()
        async with self._session.post(url, data=body, headers=headers) as answer:
            answer.raise_for_status()
            content = await answer.read()
        parsed = await aparse_json(content, what="the model server's answer")
        response = read_response(parsed, provider=self.llm.provider, label=self.model)
        return dataclasses.replace(
            response, finish_reason=lane.finish_reason(response.finish_reason)
        )

    async def complete(
        self, messages: Any, *, tools: Any = None, response_format: Any = None
    ) -> Any:
        from agentensemble._base.timeouts import within
        from agentensemble.llm import _openai_client as lane

        kwargs = self.llm.request_kwargs(messages, tools, response_format)
        request = lane.build_request(kwargs)

        async def call() -> Any:  # the guard LLM puts around every attempt
            return await within(self._post(request), self.llm.timeout + 5)

        return await self.llm.policy.run(call, label=self.model, endpoint=self.llm.api_base)


def _ensemble_run(model: Any) -> Any:
    """``arun()`` of the job: one agent on ``model`` with the one tool."""
    sys.path.insert(0, str(ROOT))
    from agentensemble import Agent, Ensemble, Task, tool

    @tool
    def lookup(city: str) -> str:
        """Look up a city's country."""
        return _lookup(city)

    agent = Agent(role="Assistant", goal="Answer", llm=model, tools=[lookup])
    ensemble = Ensemble(tasks=[Task(description=QUESTION, agent=agent)])

    async def run() -> str:
        return str((await ensemble.arun()).raw)

    return run


def _ours(url: str) -> Any:
    return _ensemble_run(_bench_llm(url))


def _ours_bare(url: str) -> Any:
    return _ensemble_run(BareModel(_bench_llm(url)))


class OfflineModel:
    """A ChatModel for this benchmark only: no HTTP at all. Each turn waits the server's answer
    delay and hands back a ready answer (the tool call, then the final text), so ``ours-offline``
    is what our run costs by itself: events, trace, prompt, the tool's hand-off, the output."""

    model = "offline"

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def complete(
        self, messages: Any, *, tools: Any = None, response_format: Any = None
    ) -> Any:
        from agentensemble.llm.types import ChatResponse, ToolCall

        await asyncio.sleep(self.delay)
        if messages[-1].get("role") == "tool":
            return ChatResponse(content=f"Lyon is in {messages[-1]['content']}.")
        call = ToolCall(id="call_1", name="lookup", arguments='{"city": "Lyon"}')
        return ChatResponse(tool_calls=[call], finish_reason="tool_calls")


def _ours_offline(url: str) -> Any:
    return _ensemble_run(OfflineModel(float(os.environ.get(DELAY_VARIABLE, "0.2"))))


def _litellm(url: str) -> Any:
    return _ensemble_run(_bench_llm(url, lane="litellm"))


def _second_messages(first: list[dict[str, Any]], call: dict[str, Any]) -> list[dict[str, Any]]:
    """The history after the tool ran: the model's call and the tool's result."""
    arguments = json.loads(call["function"]["arguments"])
    result = {"role": "tool", "tool_call_id": call["id"], "content": _lookup(**arguments)}
    return [*first, {"role": "assistant", "content": None, "tool_calls": [call]}, result]


def _llm(url: str) -> Any:
    """Our model calls without the run around them: ``LLM.complete`` twice (the openai lane,
    retry and rate-limit wrappers, our message conversion and answer reading)."""
    llm = _bench_llm(url)

    async def run() -> str:
        first: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
        answer = await llm.complete(first, tools=[TOOL])
        call = answer.tool_calls[0]
        raw = {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }
        final = await llm.complete(_second_messages(first, raw), tools=[TOOL])
        return str(final.content)

    return run


def _openai_sdk(url: str) -> Any:
    import openai

    client = openai.AsyncOpenAI(
        base_url=url,
        api_key="sk-bench",
        max_retries=0,
        timeout=600,  # as ours: the default 5 s connect bound fails 1,000 connections at once
        http_client=openai.DefaultAioHttpClient(),
    )

    async def run() -> str:
        first = [{"role": "user", "content": QUESTION}]
        answer = await client.chat.completions.create(
            model="test-model", messages=first, tools=[TOOL], tool_choice="auto"
        )
        call = answer.choices[0].message.tool_calls[0].model_dump()
        final = await client.chat.completions.create(
            model="test-model", messages=_second_messages(first, call), tools=[TOOL]
        )
        return str(final.choices[0].message.content)

    return run


def _floor(url: str) -> Any:
    import aiohttp

    session: list[aiohttp.ClientSession] = []

    async def post(body: dict[str, Any]) -> dict[str, Any]:
        if not session:  # made in the loop that uses it
            connector = aiohttp.TCPConnector(limit=1000)
            session.append(aiohttp.ClientSession(connector=connector))
        headers = {"Authorization": "Bearer sk-bench"}
        async with session[0].post(url + "/chat/completions", json=body, headers=headers) as r:
            r.raise_for_status()
            result: dict[str, Any] = await r.json()
            return result

    async def run() -> str:
        first = [{"role": "user", "content": QUESTION}]
        answer = await post({"model": "test-model", "messages": first, "tools": [TOOL]})
        call = answer["choices"][0]["message"]["tool_calls"][0]
        final = await post(
            {"model": "test-model", "messages": _second_messages(first, call), "tools": [TOOL]}
        )
        return str(final["choices"][0]["message"]["content"])

    return run


def _child(variant: str, runs: int, url: str, profile: str | None) -> None:
    makers = {
        "ours": _ours,
        "ours-bare": _ours_bare,
        "ours-offline": _ours_offline,
        "litellm": _litellm,
        "litellm-httpx": _litellm,
        "llm": _llm,
        "openai-sdk": _openai_sdk,
        "floor": _floor,
    }
    run = makers["ours" if variant == FROZEN else variant](url)

    async def measure() -> dict[str, Any]:
        for _ in range(3):  # imports, clients, connections: not what N runs at once cost
            await run()
        if variant == FROZEN:  # what a service does once started: its imports out of every scan
            import gc

            gc.collect()
            gc.freeze()
        answers, figures = await measured(
            lambda: asyncio.gather(*(run() for _ in range(runs))),
            runs,
            profile,
            ("tottime", 45),
            ("cumulative", 70),
        )
        wrong = [a for a in answers if "France" not in a]
        return {"variant": variant, **figures, "wrong": len(wrong)}

    print(json.dumps(asyncio.run(measure())), flush=True)


def measure(
    server: RecordingServer, variant: str, runs: int, profile: str | None, delay: float = 0.2
) -> dict[str, Any]:
    """One variant at one size in a fresh child; checked against what the server recorded."""
    before = server.stats()
    command = [sys.executable, __file__, "--child", variant, str(runs), server.base_url]
    if profile:
        command += ["--profile-to", profile]
    env = dict(os.environ, **{DELAY_VARIABLE: str(delay)})
    if variant == "litellm":  # litellm's own default transport (aiohttp), not our loader's
        env["DISABLE_AIOHTTP_TRANSPORT"] = "False"
    elif variant == "litellm-httpx":
        env.pop("DISABLE_AIOHTTP_TRANSPORT", None)
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{variant} at {runs} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    after = server.stats()
    sent = after["requests"] - before["requests"]
    expected = 0 if variant == OFFLINE else 2 * (runs + 3)  # the warm-up's three included
    if sent != expected or result["wrong"]:
        raise RuntimeError(f"{variant}: {sent} requests for {expected}, {result['wrong']} wrong")
    result["bytes_per_run"] = (after["bytes"] - before["bytes"]) / (runs + 3)
    return result


def _load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def peers_installed() -> list[str]:
    """The peers whose virtualenvs ``benchmarks/peers.py --install`` made."""
    folder = ROOT / "benchmarks" / ".peers"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def table(rows: list[dict[str, Any]]) -> str:
    """The Markdown table, with each variant's ratios to the floor beside the targets."""
    lines = [
        "| runs at once | variant | wall s | runs/s | CPU ms/run | peak MiB "
        "| growth KiB/run | request bytes/run | GC ms/run | collections |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['runs']} | {row['variant']} | {row['wall']:.2f} | {row['runs_per_s']:.0f} "
            f"| {row['cpu_per_run_ms']:.2f} | {row['peak_mib']:.0f} "
            f"| {row['growth_per_run_kib']:.1f} | {row['bytes_per_run']:.0f} "
            f"| {row['gc_per_run_ms']:.2f} | {' / '.join(map(str, row['collections']))} |"
        )
    lines.append("")
    for runs in sorted({row["runs"] for row in rows}):
        by = {row["variant"]: row for row in rows if row["runs"] == runs}
        if "floor" not in by:
            continue
        floor = by.pop("floor")
        for name, row in by.items():  # each variant against the targets
            cpu = row["cpu_per_run_ms"] / floor["cpu_per_run_ms"]
            speed = row["runs_per_s"] / floor["runs_per_s"]
            memory = row["growth_per_run_kib"] / max(floor["growth_per_run_kib"], 1e-9)
            verdict = {
                "cpu": "met" if cpu <= TARGETS["cpu"] else "not met",
                "throughput": "met" if speed >= TARGETS["throughput"] else "not met",
                "memory": "met" if memory <= TARGETS["memory"] else "not met",
            }
            lines.append(
                f"- {runs} at once, {name}/floor: CPU per run {cpu:.2f}x (target <= 2x: "
                f"{verdict['cpu']}), throughput {speed:.2f}x (target >= 0.5x: "
                f"{verdict['throughput']}), memory growth per run {memory:.2f}x (target <= 2x: "
                f"{verdict['memory']})"
            )
    return "\n".join(lines)


# -- first answer in a fresh process

FRESH = {
    "ours (LLM.complete, openai lane)": """
import asyncio, sys
sys.path.insert(0, {root!r})
from agentensemble import LLM
llm = LLM("openai/test-model", api_base={url!r}, api_key="sk-bench")
print(asyncio.run(llm.complete([{{"role": "user", "content": "hi"}}])).finish_reason)
""",
    "raw openai SDK (AsyncOpenAI, default httpx)": """
import asyncio, openai
async def main():
    client = openai.AsyncOpenAI(base_url={url!r}, api_key="sk-bench", max_retries=0)
    answer = await client.chat.completions.create(
        model="test-model", messages=[{{"role": "user", "content": "hi"}}])
    print(answer.choices[0].finish_reason)
asyncio.run(main())
""",
}


def fresh(url: str, repeats: int) -> list[str]:
    """Spawn-to-exit seconds of one call in a fresh process, best of ``repeats``."""
    lines = ["| fresh process, one call | best s | all s |", "|---|---|---|"]
    for name, code in FRESH.items():
        script = code.format(root=str(ROOT), url=url)
        times = []
        for attempt in range(repeats + 1):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"{name}: {done.stderr[-2000:]}")
            if attempt:  # the first start fills the page cache: discarded
                times.append(time.perf_counter() - started)
        lines.append(f"| {name} | {min(times):.2f} | {', '.join(f'{t:.2f}' for t in times)} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument(
        "--variants", nargs="+", choices=(*VARIANTS, FROZEN, *LITELLM), default=list(VARIANTS)
    )
    parser.add_argument("--profile", type=Path, help="write cProfiles of ours (and ours-bare) here")
    parser.add_argument("--fresh", type=int, default=0, help="first-answer repeats (0: skip)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--profile-to", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        variant, runs, url = args.child
        _child(variant, int(runs), url, args.profile_to)
        return 0
    rows = []
    print(f"load before: {_load()}", flush=True)
    with RecordingServer(args.delay) as server:
        for runs in args.runs:
            for variant in args.variants:
                profile = None
                if args.profile and variant in PROFILED:
                    args.profile.mkdir(parents=True, exist_ok=True)
                    profile = str(args.profile / f"{variant}-{runs}.txt")
                rows.append(measure(server, variant, runs, profile, args.delay))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        fresh_lines = fresh(server.base_url, args.fresh) if args.fresh else []
    print(f"load after: {_load()}")
    print(f"answer delay {args.delay * 1000:.0f} ms; python {sys.version.split()[0]}")
    print(table(rows))
    if fresh_lines:
        print()
        print("\n".join(fresh_lines))
    installed = peers_installed()
    print()
    print(
        f"peers: {', '.join(installed)} installed (run benchmarks/peers.py)"
        if installed
        else "peers: none installed here (benchmarks/peers.py --install makes their virtualenvs)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
