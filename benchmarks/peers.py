"""Peers side by side: import time, and a fresh process to its first answer (time, peak RSS).

Usage: ``python benchmarks/peers.py [--install] [--repeats N] [--write]``.

Each peer (smolagents, the OpenAI Agents SDK, PydanticAI, LangGraph, CrewAI) is installed with
pip into a virtualenv of its own under ``benchmarks/.peers/`` (git-ignored; ``--install`` creates or
updates them); a peer that will not install is skipped, and the table says so. Ours runs from
this checkout's interpreter. Every framework asks the same local OpenAI-compatible server (in a
separate process, 127.0.0.1 only) for one answer through its own agent API: no network, and
telemetry and tracing switched off by environment. Samples of all frameworks are interleaved,
so load drift on a shared machine hits them alike; figures are medians with min-max.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEERS_DIR = ROOT / "benchmarks" / ".peers"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
MARK = "## Peers"
BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"

SERVER_SCRIPT = """
import sys
from agentensemble.testing.openai_server import OpenAICompatibleServer, TextReply, ToolCallsReply

def respond(body):
    offered = [t.get("function", {}).get("name") for t in body.get("tools") or []]
    answered = any(m.get("role") == "tool" for m in body.get("messages", []))
    if "final_answer" in offered and not answered:  # smolagents ends through this tool
        return ToolCallsReply((("final_answer", '{"answer": "hi"}'),))
    return TextReply("Thought: I now know the final answer\\nFinal Answer: hi")

with OpenAICompatibleServer() as server:
    server.set_responder(respond)
    print(server.base_url, flush=True)
    sys.stdin.read()
"""

ANSWER_HELPER = """
def answer(text):
    print("ANSWER:", " ".join(str(text).split()), flush=True)

def timed(run, warm=3, rounds=15):
    import statistics, time
    for _ in range(warm):
        run()
    spent = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        spent.append(time.perf_counter() - started)
    print("MS:", statistics.median(spent) * 1000, min(spent) * 1000, max(spent) * 1000, flush=True)
"""

QUIET_ENV = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "OTEL_SDK_DISABLED": "true",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "HF_HUB_OFFLINE": "1",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "OPENAI_API_KEY": "sk-test",
    "DO_NOT_TRACK": "1",
}


@dataclass(frozen=True)
class Peer:
    name: str
    pip: tuple[str, ...]  # what to install; empty for ours
    module: str  # what `import` measures
    distribution: str  # whose version the table shows
    first_answer: str  # a script printing "ANSWER: <text>"; BASE is the server's /v1 URL
    thousand_tools: str | None = None  # a script printing "MS: <median of warm runs>"
    thousand_tools_local: str | None = None  # the same with an in-process model: no HTTP
    imports: str | None = None  # what the import column measures, when not ``import module``


PEERS = [
    Peer(
        "agentensemble (ours)",
        (),
        "agentensemble",
        "agentensemble-py",
        """
from agentensemble import LLM, Agent, Ensemble, Task
llm = LLM("openai/test-model", api_base=BASE, api_key="sk-test")
agent = Agent(role="Assistant", goal="Answer", llm=llm)
answer(Ensemble(tasks=[Task(description="Say hi", agent=agent)]).run().raw)
""",
        """
from agentensemble import LLM, Agent, Ensemble, Task, tool

def make(i):
    def echo(text: str) -> str:
        return text
    echo.__name__, echo.__doc__ = f"tool_{i}", f"Tool number {i}: echoes its text."
    return tool(echo)

llm = LLM("openai/test-model", api_base=BASE, api_key="sk-test")
agent = Agent(role="Assistant", goal="Answer", llm=llm, tools=[make(i) for i in range(1000)])
ensemble = Ensemble(tasks=[Task(description="Say hi", agent=agent)])
timed(lambda: ensemble.run().raw)
""",
        """
from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.llm.types import ChatResponse

def make(i):
    def echo(text: str) -> str:
        return text
    echo.__name__, echo.__doc__ = f"tool_{i}", f"Tool number {i}: echoes its text."
    return tool(echo)

class Answering:  # in this process: what is left is the framework's own work per run
    model = "local"
    async def complete(self, messages, tools=None, **_):
        assert len(tools) == 1000
        return ChatResponse(content="hi", finish_reason="stop")

agent = Agent(role="Assistant", goal="Answer", llm=Answering(),
              tools=[make(i) for i in range(1000)])
ensemble = Ensemble(tasks=[Task(description="Say hi", agent=agent)])
timed(lambda: ensemble.run().raw, warm=20, rounds=200)
""",
        # `import agentensemble` alone imports each name on first use: what a script imports
        imports="from agentensemble import LLM, Agent, Ensemble, Task",
    ),
    Peer(
        "openai SDK, no framework",
        (),
        "openai",
        "openai",
        """
from openai import OpenAI
client = OpenAI(base_url=BASE, api_key="sk-test")
reply = client.chat.completions.create(
    model="test-model", messages=[{"role": "user", "content": "Say hi"}]
)
answer(reply.choices[0].message.content)
""",
    ),
    Peer(
        "langgraph",
        ("langgraph", "langchain-openai"),
        "langgraph.prebuilt",  # `langgraph` itself is an empty namespace package
        "langgraph",
        """
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent
model = ChatOpenAI(model="test-model", base_url=BASE, api_key="sk-test")
agent = create_react_agent(model, [])
answer(agent.invoke({"messages": [("user", "Say hi")]})["messages"][-1].content)
""",
        """
import warnings
warnings.simplefilter("ignore")
from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent

def make(i):
    def echo(text: str) -> str:
        return text
    return StructuredTool.from_function(echo, name=f"tool_{i}",
                                        description=f"Tool number {i}: echoes its text.")

model = ChatOpenAI(model="test-model", base_url=BASE, api_key="sk-test")
agent = create_react_agent(model, [make(i) for i in range(1000)])
timed(lambda: agent.invoke({"messages": [("user", "Say hi")]})["messages"][-1].content)
""",
        """
import itertools, warnings
warnings.simplefilter("ignore")
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool
from langgraph.prebuilt import create_react_agent

def make(i):
    def echo(text: str) -> str:
        return text
    return StructuredTool.from_function(echo, name=f"tool_{i}",
                                        description=f"Tool number {i}: echoes its text.")

class Answering(GenericFakeChatModel):  # in this process; tools bound once, as ChatOpenAI does
    def bind_tools(self, tools, **kwargs):
        assert len(tools) == 1000
        return self

model = Answering(messages=itertools.repeat(AIMessage(content="hi")))
agent = create_react_agent(model, [make(i) for i in range(1000)])
timed(lambda: agent.invoke({"messages": [("user", "Say hi")]})["messages"][-1].content,
      warm=20, rounds=200)
""",
    ),
    Peer(
        "smolagents",
        ("smolagents[openai]",),
        "smolagents",
        "smolagents",
        """
from smolagents import OpenAIServerModel, ToolCallingAgent
model = OpenAIServerModel(model_id="test-model", api_base=BASE, api_key="sk-test")
agent = ToolCallingAgent(tools=[], model=model, verbosity_level=0)
answer(agent.run("Say hi"))
""",
    ),
    Peer(
        "openai-agents",
        ("openai-agents",),
        "agents",
        "openai-agents",
        """
from openai import AsyncOpenAI
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
set_tracing_disabled(True)
client = AsyncOpenAI(base_url=BASE, api_key="sk-test")
agent = Agent(name="Assistant", instructions="Answer",
              model=OpenAIChatCompletionsModel(model="test-model", openai_client=client))
answer(Runner.run_sync(agent, "Say hi").final_output)
""",
    ),
    Peer(
        "pydantic-ai",
        ("pydantic-ai-slim[openai]",),
        "pydantic_ai",
        "pydantic-ai-slim",
        """
from pydantic_ai import Agent
from pydantic_ai.providers.openai import OpenAIProvider
try:
    from pydantic_ai.models.openai import OpenAIChatModel as Model
except ImportError:
    from pydantic_ai.models.openai import OpenAIModel as Model
model = Model("test-model", provider=OpenAIProvider(base_url=BASE, api_key="sk-test"))
answer(Agent(model).run_sync("Say hi").output)
""",
    ),
    Peer(
        "crewai",
        ("crewai",),
        "crewai",
        "crewai",
        """
from crewai import LLM, Agent, Crew, Task
llm = LLM(model="openai/test-model", base_url=BASE, api_key="sk-test")
agent = Agent(role="Assistant", goal="Answer", backstory="Helpful", llm=llm, verbose=False)
task = Task(description="Say hi", expected_output="A greeting", agent=agent)
answer(Crew(agents=[agent], tasks=[task], verbose=False).kickoff().raw)
""",
    ),
]


PEER_NOTES = """
- Each peer's versions are what pip resolved into its own virtualenv under `benchmarks/.peers/`
  (`<peer>/bin/pip list` shows them); ours is this checkout.
- Every framework gets the same answer from the server: smolagents' `ToolCallingAgent` ends by
  calling its `final_answer` tool, so the server answers it with that call; the others get one
  text answer ("Thought: ... Final Answer: hi", the shape CrewAI parses).
- "One run, 1,000 tools (warm)": in one process, an agent with 1,000 tools (each takes a string)
  built once, then run 15 times after 3 warm-up runs against the same local server; the median
  and min-max of one run, request and answer included (every request carries the 1,000 tool
  specs). Measured where the comparison is like for like (ours and LangGraph's prebuilt ReAct
  agent); "-" elsewhere.
- "Same, model in-process": the same agent and 1,000 tools with a model object in the process
  answering at once (ours: a `ChatModel`; LangGraph: a `GenericFakeChatModel` whose
  `bind_tools` takes the tools once, as `ChatOpenAI` does), 200 runs after 20 warm-up runs in a
  fresh process per sample, the two frameworks alternating; the median and min-max of the
  per-sample medians. No HTTP and no JSON: what is left is each framework's own work per run.
- "Import" is `import <package>` in a fresh interpreter (bytecode cached), except ours:
  `import agentensemble` imports each public name on first use and costs next to nothing, so
  ours is `from agentensemble import LLM, Agent, Ensemble, Task`, what the script imports.
- "Fresh process to first answer" is from starting the interpreter to the answer printed: imports,
  building the agent, one HTTP round trip. Peak RSS is the child's `ru_maxrss`.
- "openai SDK, no framework" is the floor for the first answer: the `openai` package asking
  the same server once, from this checkout's virtualenv (the guard of issue 37: ours at or
  below it).
- Ours reaches an OpenAI-compatible server on the openai lane (the `openai` package on its
  aiohttp transport, litellm never imported). Forced through litellm
  (`lane="litellm"`) it took 4-7 s and about 200 MiB in earlier runs, like CrewAI, which always
  goes through litellm: importing litellm is most of that.
- Ratios between frameworks hold better than absolute times on this shared machine (load
  average in the header): every framework was slowed alike, round by round.
"""


def python_of(peer: Peer) -> Path:
    if not peer.pip:
        return Path(sys.executable)
    return PEERS_DIR / peer.module.split(".")[0] / "bin" / "python"


def install(peer: Peer) -> str | None:
    """Create the peer's virtualenv and pip-install it; None, or why it could not."""
    venv = PEERS_DIR / peer.module.split(".")[0]
    if not python_of(peer).exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = subprocess.run(
        [str(python_of(peer)), "-m", "pip", "install", "-q", *peer.pip],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or ["pip failed"])[-1][:200]
    return None


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(QUIET_ENV)
    return env


def version_of(peer: Peer) -> str:
    code = f"import importlib.metadata as m; print(m.version({peer.distribution!r}))"
    out = subprocess.run([str(python_of(peer)), "-c", code], capture_output=True, text=True)
    return out.stdout.strip() or "?"


def import_seconds(peer: Peer) -> float:
    statement = peer.imports or f"import {peer.module}"
    code = f"import time; t = time.perf_counter(); {statement}; "
    code += "print(time.perf_counter() - t)"
    out = subprocess.run(
        [str(python_of(peer)), "-c", code],
        env=environment(),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return float(out.stdout.strip().splitlines()[-1])


def first_answer(peer: Peer, base_url: str) -> tuple[float, float, str]:
    """A fresh process: seconds until it printed its answer, its peak RSS (MiB), the answer."""
    script = f"BASE = {base_url!r}\n{ANSWER_HELPER}" + peer.first_answer
    started = time.perf_counter()
    child = subprocess.Popen(
        [str(python_of(peer)), "-c", script],
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdout is not None
    answer, seconds = "", float("nan")
    for line in child.stdout:
        if line.startswith("ANSWER:"):
            seconds = time.perf_counter() - started
            answer = line.removeprefix("ANSWER:").strip()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if not answer:
        raise RuntimeError(f"{peer.name}: no answer (exit code {child.returncode})")
    return seconds, usage.ru_maxrss / 1024, answer


def thousand_tools_ms(
    peer: Peer, base_url: str, local: bool = False
) -> tuple[float, float, float] | None:
    """Median, min and max ms of a warm run with 1,000 tools bound, over the local server (or
    with an in-process model, ``local``)."""
    body = peer.thousand_tools_local if local else peer.thousand_tools
    if body is None:
        return None
    script = f"BASE = {base_url!r}\n{ANSWER_HELPER}" + body
    out = subprocess.run(
        [str(python_of(peer)), "-c", script],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    line = next((x for x in out.stdout.splitlines() if x.startswith("MS:")), None)
    if line is None:
        raise RuntimeError(f"{peer.name}: 1,000 tools run failed: {out.stderr[-300:]}")
    median, low, high = (float(x) for x in line.split()[1:4])
    return median, low, high


def spread(values: list[float], digits: int, unit: str) -> str:
    return (
        f"{statistics.median(values):.{digits}f} {unit} "
        f"({min(values):.{digits}f}-{max(values):.{digits}f})"
    )


def measure(peers: list[Peer], repeats: int, skipped: dict[str, str]) -> list[str]:
    imports: dict[str, list[float]] = {p.name: [] for p in peers}
    many: dict[str, tuple[float, float, float] | None] = {}
    local: dict[str, list[tuple[float, float, float] | None]] = {p.name: [] for p in peers}
    answers: dict[str, list[tuple[float, float, str]]] = {p.name: [] for p in peers}
    child = subprocess.Popen(
        [sys.executable, "-c", SERVER_SCRIPT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        base_url = child.stdout.readline().strip()
        for peer in list(peers):  # warm-up, not counted: bytecode caches written
            try:
                import_seconds(peer)
                first_answer(peer, base_url)
            except (RuntimeError, subprocess.SubprocessError) as error:
                skipped[peer.name] = f"installed, but its run failed: {error}"[:200]
                peers.remove(peer)
        for _ in range(repeats):  # interleaved: each round runs every framework once
            for peer in peers:
                imports[peer.name].append(import_seconds(peer))
                answers[peer.name].append(first_answer(peer, base_url))
        for peer in peers:  # each in a process of its own, one after the other
            many[peer.name] = thousand_tools_ms(peer, base_url)
        for _ in range(repeats):  # in-process model: a process each, frameworks alternating
            for peer in peers:
                local[peer.name].append(thousand_tools_ms(peer, base_url, local=True))
    finally:
        child.stdin.close()
        child.wait(timeout=30)
    rows = []
    for peer in peers:
        times = [a[0] for a in answers[peer.name]]
        rss = [a[1] for a in answers[peer.name]]
        found = many.get(peer.name)
        tools = "-" if found is None else f"{found[0]:.1f} ms ({found[1]:.1f}-{found[2]:.1f})"
        medians = [sample[0] for sample in local[peer.name] if sample is not None]
        here = "-" if not medians else spread(medians, 2, "ms")
        rows.append(
            f"| {peer.name} {version_of(peer)} | {spread(imports[peer.name], 2, 's')} "
            f"| {spread(times, 2, 's')} "
            f"| {spread(rss, 0, 'MiB')} | {tools} | {here} | {answers[peer.name][-1][2]!r} |"
        )
    return rows


def render(rows: list[str], skipped: dict[str, str], repeats: int, seconds: float) -> str:
    lines = [
        MARK,
        "",
        "Recorded by `python benchmarks/peers.py --install --write`: each framework's own agent "
        "API asks the local OpenAI-compatible server (another process) for one answer.",
        f"Measured {date.today().isoformat()} on {platform.machine()}, Python "
        f"{platform.python_version()}, {os.cpu_count()} cores shared with other developers' "
        f"work (load average {os.getloadavg()[0]:.1f} at the end); {repeats} interleaved rounds "
        f"after a warm-up; run took {seconds:.0f} s.",
        "",
        "| framework | import | fresh process to first answer | peak RSS "
        "| one run, 1,000 tools (warm) | same, model in-process | answer |",
        "|---|---|---|---|---|---|---|",
        *rows,
    ]
    for name, why in skipped.items():
        lines.append(f"| {name} | skipped: {why} | | | | | |")
    return "\n".join(lines) + "\n" + PEER_NOTES


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--install", action="store_true", help="create/update peer virtualenvs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="record in benchmarks/RESULTS.md")
    args = parser.parse_args()
    started = time.perf_counter()
    skipped: dict[str, str] = {}
    peers: list[Peer] = []
    for peer in PEERS:
        why = install(peer) if args.install and peer.pip else None
        if why is None and not python_of(peer).exists():
            why = "not installed (run with --install)"
        if why is not None:
            skipped[peer.name] = why
            print(f"skipping {peer.name}: {why}", file=sys.stderr)
        else:
            peers.append(peer)
    rows = measure(peers, args.repeats, skipped)
    table = render(rows, skipped, args.repeats, time.perf_counter() - started)
    print(table)
    if args.write:  # replaces its own section only, between its markers
        text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
        section = f"{BEGIN}\n{table}{END}\n"
        if BEGIN in text and END in text:
            before, _, rest = text.partition(BEGIN)
            text = before + section + rest.partition(END + "\n")[2]
        else:
            text = text.rstrip() + "\n\n" + section
        RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
