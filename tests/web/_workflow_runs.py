"""Real runs of iterative workflows for the console's timeline views, with a scripted model.

``workflow_ensemble`` is one run holding each kind of group a run page shows: a task that reads
memory first, a writer/critic ``Loop`` that stops when its ``until`` holds, a ``Graph`` that goes
back once on a conditional edge, a fan-out task (``for_each``) and a nested ensemble.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentensemble import Agent, Edge, Ensemble, Graph, GraphState, Loop, LoopState, Task
from agentensemble.memory import SQLiteMemory
from agentensemble.testing import FunctionChatModel

LONG_NOTE = "Customer 42 history: " + "ordered a kettle, asked about delivery; " * 40


def critic_approves(state: LoopState) -> bool:
    """The loop's ``until``: the critic said APPROVED."""
    return "APPROVED" in state.outputs["critique"].raw


def research_is_thin(state: GraphState) -> bool:
    """The graph's conditional edge: the answer says the research was thin (the first time)."""
    return state.output.raw.startswith("THIN")


def scripted_model() -> FunctionChatModel:
    """Answers each task by what its prompt asks; the critic approves the second draft and the
    answer is thin until the research ran twice."""
    seen: dict[str, int] = {}

    def answer(messages: list[dict[str, Any]], tools: Any) -> str:
        prompt = str(messages[-1]["content"]).rsplit("## Task", 1)[-1]  # not the context
        for key, replies in SCRIPT.items():
            if key in prompt:
                count = seen[key] = seen.get(key, 0) + 1
                return replies[min(count, len(replies)) - 1]
        return "Done."

    return FunctionChatModel(answer)


SCRIPT = {
    "Write a tagline": ["Kettles, fast.", "Boil water, not time."],
    "Judge the tagline": ["Too plain; say what it saves.", "APPROVED: clear and short."],
    "Classify": ["billing"],
    "Find the facts": ["Refunds take 5 days.", "Refunds take 5 days; card refunds 10."],
    "Answer the customer": ["THIN: which payment method?", "Your refund arrives in 5-10 days."],
    "Summarise document": ["A summary."],
    "Check the numbers": ["The numbers add up."],
    "Recall what we know": ["They ordered a blue kettle."],
}


def workflow_ensemble(
    memory_path: Path, listeners: list[Any], *, memory_text: str = LONG_NOTE
) -> Ensemble:
    """The run described in the module docstring (memory in a SQLite file at ``memory_path``)."""
    store = SQLiteMemory(memory_path)
    store.add("customer-42", "Customer 42 ordered a blue kettle")
    store.add("customer-42", memory_text)
    helper = Agent(role="Helper", goal="Help")
    recall = Task(
        description="Recall what we know about customer 42's kettle order",
        agent=helper,
        memory=["customer-42"],
    )
    write = Task(name="write", description="Write a tagline for a kettle", agent=helper)
    critique = Task(
        name="critique",
        description="Judge the tagline",
        context=[write],
        agent=Agent(role="Critic", goal="Judge"),
    )
    polish = Loop(name="polish", body=[write, critique], until=critic_approves, max_iterations=3)
    desk = Graph(
        name="support",
        start="triage",
        states={
            "triage": Task(description="Classify the question", agent=helper),
            "research": Task(description="Find the facts", agent=helper),
            "answer": Task(description="Answer the customer", agent=helper),
        },
        edges=[
            Edge("triage", "research"),
            Edge("research", "answer"),
            Edge("answer", "research", when=research_is_thin),
            Edge("answer", Graph.END),
        ],
        max_steps=6,
    )
    fan_out = Task(
        name="summaries",
        description="Summarise document {item}",
        agent=helper,
        for_each="documents",
    )
    audit = Ensemble(name="audit", tasks=[Task(description="Check the numbers", agent=helper)])
    return Ensemble(
        name="Kettle support",
        tasks=[recall, polish, desk, fan_out, audit],
        llm=scripted_model(),
        memory=store,
        listeners=listeners,
    )


INPUTS = {"documents": ["invoice.pdf", "receipt.pdf"]}
