"""Setups a docs code block can ask for with ``<!-- scaffold: NAME -->`` before its fence.

Each is Python source run in the block's namespace first. Keep them small and honest: they
define what the prose around the block has already introduced (tools of a worked example, the
tasks of an earlier paragraph), nothing more. Models reach the local docs server
(``OPENAI_BASE_URL``), or are scripted here.
"""

from __future__ import annotations

_PIPELINE_TOOLS = '''
import json

from agentensemble import Agent, Ensemble, ReturnBehavior, Task, ToolPipeline, tool


@tool
def parse_order(order: str) -> dict[str, list[float]]:
    """Parse an order given as JSON text into the amount of each line."""
    items = json.loads(order)["items"]
    return {"amounts": [float(item["price"]) * int(item["qty"]) for item in items]}


@tool
def compute_total(amounts: list[float], tax_rate: float = 0.2) -> dict[str, float]:
    """Add up line amounts and the tax on them."""
    subtotal = sum(amounts)
    tax = round(subtotal * tax_rate, 2)
    return {"subtotal": subtotal, "tax": tax, "total": subtotal + tax}


@tool
def format_invoice(subtotal: float, tax: float, total: float) -> str:
    """Format totals as one invoice line."""
    return f"Subtotal {subtotal:.2f} + tax {tax:.2f} = total {total:.2f}"


@tool
def format_amount(amount: float) -> str:
    """Format an amount."""
    return f"{amount:.2f}"


@tool
def fetch(url: str) -> str:
    """Fetch a page."""
    return "<p>page</p>"


fetch_page = fetch


@tool
def strip_html(html: str) -> str:
    """Remove tags."""
    return html.replace("<p>", "").replace("</p>", "")


@tool
def squeeze_spaces(text: str) -> str:
    """Collapse runs of spaces."""
    return " ".join(text.split())


@tool
def summarise(text: str) -> str:
    """Summarise a text."""
    return text[:100]


invoice = ToolPipeline([parse_order, compute_total, format_invoice], name="invoice")
'''

_TWO_TASKS = """
from agentensemble import Agent, Task

researcher = Agent(role="Researcher", goal="Find facts", llm="openai/gpt-4o-mini")
writer = Agent(role="Writer", goal="Write", llm="openai/gpt-4o-mini")
research = Task(description="Research the topic", agent=researcher)
write = Task(description="Write the report", agent=writer, context=[research])
a, b, c = (Task(description=f"Step {n}", agent=writer) for n in (1, 2, 3))
"""

_QUICKSTART = '''
from agentensemble import Agent, Ensemble, Task, tool


@tool
def search_notes(query: str) -> str:
    """Search the team's notes."""
    return "Tools let an agent act."


def build_my_ensemble(llm):
    researcher = Agent(role="Researcher", goal="Collect facts about {topic}", tools=[search_notes])
    writer = Agent(role="Writer", goal="Explain {topic} simply")
    research = Task(description="Gather facts about {topic}", agent=researcher)
    write = Task(description="Write about {topic}", agent=writer, context=[research])
    return Ensemble(tasks=[research, write], llm=llm)
'''

_NOTES_AGENT = '''
from agentensemble import Agent, tool


@tool
def search_notes(query: str) -> str:
    """Search the team's notes."""
    return "notes about " + query


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


agent = Agent(role="Researcher", goal="Answer from the notes", tools=[search_notes, add])
'''

_WEBHOOK_ENV = """
import os

os.environ.setdefault("REVIEW_WEBHOOK_SECRET", "s3cret")
token = "a-bearer-token"
"""

_IN_REPO = """
import os
from pathlib import Path

import agentensemble

os.chdir(Path(agentensemble.__file__).absolute().parent.parent)  # paths like examples/crew.yaml
"""

SCAFFOLDS: dict[str, str] = {
    "in-repo": _IN_REPO,  # run from the repository root (restored after the block)
    "pipeline-tools": _PIPELINE_TOOLS,  # the tools of docs/pipelines.md's worked example
    "two-tasks": _TWO_TASKS,  # research and write (and a, b, c), on a model name
    "quickstart": _QUICKSTART,  # build_my_ensemble(llm) from docs/quickstart.md
    "notes-agent": _NOTES_AGENT,  # an agent with search_notes and add, and no model
    "webhook-env": _WEBHOOK_ENV,  # the secret variable and a token a webhook example reads
}

__all__ = ["SCAFFOLDS"]
