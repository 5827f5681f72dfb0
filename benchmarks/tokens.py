"""Framework-added prompt tokens: what each request carries beyond the user's own words.

Usage: ``python benchmarks/tokens.py [--write]``.

Each job runs through our public API against a local OpenAI-compatible server (127.0.0.1, in
this process) that records every request body. Each body is counted with litellm's offline
tokenizer (``token_counter`` for ``gpt-4o-mini``: messages and tool definitions, as a provider
bills them), and so is the same request written with the user's words only: the agent's role
and goal as the system message, the task's description (and an earlier task's output, for a
chain) as the user message, the same tools and the same tool round. The difference, per
request, is what the framework adds; issue 44 asks for at most 20.

Peers, where a virtualenv of theirs exists under ``benchmarks/.peers/`` (``peers.py --install``
makes them), run the same jobs against the same server in their own process; their requests
are counted the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentensemble.testing.openai_server import (  # noqa: E402
    OpenAICompatibleServer,
    TextReply,
    ToolCallsReply,
)

PEERS_DIR = ROOT / "benchmarks" / ".peers"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
BEGIN, END = "<!-- tokens:begin -->", "<!-- tokens:end -->"
COUNT_MODEL = "gpt-4o-mini"

ROLE, GOAL = "Weather reporter", "Tell people the weather"
QUESTION = "What is the weather in Paris?"
TOOL_DOC = "Return the weather for a city."
WEATHER = "Sunny, 21 C"
ANSWER = "It is sunny in Paris, 21 C."
FACTS_ROLE, FACTS_GOAL = "Researcher", "Find facts"
FACTS_TASK = "List three facts about the Moon."
FACTS = "1. The Moon orbits Earth. 2. It has no air. 3. It causes tides."
WRITER_ROLE, WRITER_GOAL = "Writer", "Write clear prose"
WRITE_TASK = "Write one paragraph from the facts."
PARAGRAPH = "The Moon orbits Earth, has no air and moves the tides."


def _respond(body: dict[str, Any]) -> TextReply | ToolCallsReply:
    """The same answers whoever asks: the tool once when one is offered, then text."""
    messages = body.get("messages") or []
    offered = [t.get("function", {}).get("name") for t in body.get("tools") or []]
    answered = any(m.get("role") == "tool" for m in messages)
    if "get_weather" in offered and not answered:
        return ToolCallsReply((("get_weather", json.dumps({"city": "Paris"})),))
    if "get_weather" in offered:
        return TextReply(ANSWER)
    text = " ".join(str(m.get("content")) for m in messages)
    return TextReply(PARAGRAPH if "Write one paragraph" in text else FACTS)


# ------------------------------------------------------------------------------ the jobs, ours


def get_weather(city: str) -> str:
    """Return the weather for a city."""
    return WEATHER


def _ours_one_tool(base_url: str) -> None:
    from agentensemble import LLM, Agent, Ensemble, Task, tool

    llm = LLM(model=f"openai/{COUNT_MODEL}", api_base=base_url, api_key="sk-local")
    agent = Agent(role=ROLE, goal=GOAL, llm=llm, tools=[tool(get_weather)])
    Ensemble(agents=[agent], tasks=[Task(description=QUESTION, agent=agent)]).run()


def _ours_chain(base_url: str) -> None:
    from agentensemble import LLM, Agent, Ensemble, Task

    llm = LLM(model=f"openai/{COUNT_MODEL}", api_base=base_url, api_key="sk-local")
    researcher = Agent(role=FACTS_ROLE, goal=FACTS_GOAL, llm=llm)
    writer = Agent(role=WRITER_ROLE, goal=WRITER_GOAL, llm=llm)
    facts = Task(description=FACTS_TASK, agent=researcher)
    write = Task(description=WRITE_TASK, agent=writer, context=[facts])
    Ensemble(agents=[researcher, writer], tasks=[facts, write]).run()


# ------------------------------------------------------------------- the user's words alone


def _bare_one_tool(bodies: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each recorded request with the framework's text taken out: role and goal, the question,
    and whatever tool round the request carried, as the framework sent it."""
    bare = []
    for body in bodies:
        rounds = [m for m in body["messages"] if m.get("role") in ("assistant", "tool")]
        messages = [
            {"role": "system", "content": f"{ROLE}\n{GOAL}"},
            {"role": "user", "content": QUESTION},
            *rounds,
        ]
        bare.append({"messages": messages, "tools": body.get("tools")})
    return bare


def _bare_chain(bodies: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The researcher's request, then the writer's with the facts before its task."""
    first = [
        {"role": "system", "content": f"{FACTS_ROLE}\n{FACTS_GOAL}"},
        {"role": "user", "content": FACTS_TASK},
    ]
    second = [
        {"role": "system", "content": f"{WRITER_ROLE}\n{WRITER_GOAL}"},
        {"role": "user", "content": f"{FACTS}\n\n{WRITE_TASK}"},
    ]
    return [{"messages": first}, {"messages": second}][: len(bodies)]


@dataclass(frozen=True)
class Job:
    name: str
    ours: Callable[[str], None]
    bare: Callable[[Sequence[dict[str, Any]]], list[dict[str, Any]]]
    peer_key: str


JOBS = (
    Job("one agent, one tool (2 requests)", _ours_one_tool, _bare_one_tool, "one_tool"),
    Job("two-task chain (2 requests)", _ours_chain, _bare_chain, "chain"),
)

# ------------------------------------------------------------------------------------ peers

PEER_JOBS: dict[str, dict[str, str]] = {
    "pydantic_ai": {
        "one_tool": f"""
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
model = OpenAIChatModel("{COUNT_MODEL}", provider=OpenAIProvider(base_url=BASE, api_key="sk-local"))
agent = Agent(model, instructions="You are a {ROLE.lower()}. {GOAL}.")
@agent.tool_plain
def get_weather(city: str) -> str:
    \"\"\"{TOOL_DOC}\"\"\"
    return "{WEATHER}"
agent.run_sync("{QUESTION}")
""",
    },
    "agents": {
        "one_tool": f"""
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents import OpenAIChatCompletionsModel
from openai import AsyncOpenAI
set_tracing_disabled(True)
@function_tool
def get_weather(city: str) -> str:
    \"\"\"{TOOL_DOC}\"\"\"
    return "{WEATHER}"
model = OpenAIChatCompletionsModel("{COUNT_MODEL}", AsyncOpenAI(base_url=BASE, api_key="sk-local"))
agent = Agent(name="{ROLE}", instructions="You are a {ROLE.lower()}. {GOAL}.", model=model,
              tools=[get_weather])
Runner.run_sync(agent, "{QUESTION}")
""",
    },
}


def _run_peer(peer: str, script: str, base_url: str) -> str | None:
    python = PEERS_DIR / peer / "bin" / "python"
    if not python.exists():
        return "not installed"
    env = dict(os.environ, OPENAI_API_KEY="sk-local", OTEL_SDK_DISABLED="true")
    done = subprocess.run(
        [str(python), "-c", f"BASE = {base_url!r}\n{script}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode:
        return "failed: " + (done.stderr.strip().splitlines() or ["?"])[-1][:120]
    return None


# ----------------------------------------------------------------------------------- counting


def prompt_tokens(body: dict[str, Any]) -> int:
    """What a provider bills as the prompt: the messages and the tool definitions."""
    import litellm

    return int(
        litellm.token_counter(
            model=COUNT_MODEL, messages=body["messages"], tools=body.get("tools") or None
        )
    )


def _recorded(run: Callable[[str], None]) -> list[dict[str, Any]]:
    with OpenAICompatibleServer() as server:
        server.set_responder(_respond)
        run(server.base_url)
        return [dict(body) for body in server.requests]


def measure() -> list[dict[str, Any]]:
    rows = []
    for job in JOBS:
        ours = _recorded(job.ours)
        bare = job.bare(ours)
        ours_total = sum(map(prompt_tokens, ours))
        bare_total = sum(map(prompt_tokens, bare))
        row: dict[str, Any] = {
            "job": job.name,
            "requests": len(ours),
            "ours": ours_total,
            "words": bare_total,
            "added_per_request": (ours_total - bare_total) / max(1, len(ours)),
            "peers": {},
        }
        for peer, scripts in PEER_JOBS.items():
            script = scripts.get(job.peer_key)
            if script is None:
                continue
            with OpenAICompatibleServer() as server:
                server.set_responder(_respond)
                problem = _run_peer(peer, script, server.base_url)
                bodies = [dict(body) for body in server.requests]
            row["peers"][peer] = problem or sum(map(prompt_tokens, bodies))
        rows.append(row)
    return rows


def table(rows: Sequence[dict[str, Any]]) -> str:
    peers = sorted({p for row in rows for p in row["peers"]})
    head = ["job", "requests", "user's words", "ours", "ours: added per request", *peers]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [
            row["job"],
            str(row["requests"]),
            str(row["words"]),
            str(row["ours"]),
            f"{row['added_per_request']:+.1f}",
            *(str(row["peers"].get(p, "-")) for p in peers),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    os.environ.setdefault("AGENTENSEMBLE_EMBEDDER", "lexical")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline: no fetch
    rows = measure()
    text = table(rows)
    print(text)
    if args.write:
        stamp = f"{date.today()} · Python {platform.python_version()} · {COUNT_MODEL} tokenizer"
        block = f"{BEGIN}\n{stamp}\n\n{text}\n{END}"
        current = RESULTS.read_text()
        if BEGIN in current:
            before, rest = current.split(BEGIN, 1)
            current = before + block + rest.split(END, 1)[1]
        else:
            current += f"\n## Framework-added tokens\n\n{block}\n"
        RESULTS.write_text(current)


if __name__ == "__main__":
    main()
