"""Three tools, one tool call: parse an order (JSON) -> compute the totals -> format an invoice.

Run it with ``python examples/tool_pipeline.py``. With no API key it runs offline on a scripted
model (and says so); with ``OPENAI_API_KEY`` set it uses ``openai/gpt-4o-mini``, and
``AGENTENSEMBLE_MODEL`` names any litellm model. See docs/pipelines.md.
"""

from __future__ import annotations

import json

from _model_choice import choose_model

from agentensemble import Agent, ChatModel, Ensemble, Task, ToolPipeline, tool
from agentensemble.testing import ScriptedChatModel, text, tool_call

ORDER = json.dumps(
    {
        "items": [
            {"name": "pen", "price": 1.5, "qty": 4},
            {"name": "notepad", "price": 4.0, "qty": 2},
        ]
    }
)


@tool
def parse_order(order: str) -> dict[str, list[float]]:
    """Parse an order given as JSON text into the amount of each line.

    Args:
        order: JSON like {"items": [{"name": "pen", "price": 1.5, "qty": 4}]}
    """
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


# parse_order's dict becomes compute_total's arguments, whose dict becomes format_invoice's.
invoice = ToolPipeline(
    [parse_order, compute_total, format_invoice],
    name="invoice",
    description=(
        "Turn an order into an invoice line. input: the order as JSON text, "
        '{"items": [{"name": ..., "price": ..., "qty": ...}]}'
    ),
)


def offline_model() -> ChatModel:
    """The scripted offline model: the turns a real model would take."""
    return ScriptedChatModel(
        [
            tool_call("invoice", {"input": ORDER}),
            text("Invoice: Subtotal 14.00 + tax 2.80 = total 16.80"),
        ]
    )


def build(model: str | ChatModel) -> Ensemble:
    clerk = Agent(
        role="Clerk",
        goal="Write invoice lines",
        background="Always use the invoice tool; never compute totals yourself.",
        tools=[invoice],
    )
    task = Task(
        description="Write the invoice line for this order: {order}",
        expected_output="One invoice line",
        agent=clerk,
    )
    return Ensemble(tasks=[task], llm=model)


def main() -> int:
    model, banner = choose_model(offline_model())
    print(banner)
    output = build(model).run(inputs={"order": ORDER}).task_outputs[0]
    for call in output.tool_calls:
        print(f"\nTool call: {call.name}({call.arguments}) -> {call.output}")
    print(f"\n{output.raw}")
    print(f"\nModel calls: {output.llm_calls}; the three steps ran inside one tool call.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
