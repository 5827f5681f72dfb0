"""ToolPipeline end to end through litellm and a real local server: one tool call for three
steps, the model sees only the final output; the same tools given separately cost more trips."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai_server import OpenAIServer

from agentensemble import LLM, Agent, Ensemble, RetryPolicy, ReturnBehavior, Task, tool
from agentensemble.outputs import TaskOutput
from agentensemble.tools.pipeline import ToolPipeline

pytestmark = pytest.mark.e2e

FAST = RetryPolicy(max_attempts=2, initial_backoff=0.001, max_backoff=0.01, jitter=0)

ORDER = (
    '{"items": [{"name": "pen", "price": 1.5, "qty": 4}, {"name": "pad", "price": 4, "qty": 1}]}'
)
AMOUNTS = '{"amounts": [6.0, 4.0]}'  # what parse_order hands to compute_total
TOTALS = '{"subtotal": 10.0, "tax": 2.0, "total": 12.0}'  # what compute_total hands on
INVOICE = "Subtotal 10.00 + tax 2.00 = total 12.00"


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


def invoice_pipeline() -> ToolPipeline:
    return ToolPipeline(
        [parse_order, compute_total, format_invoice],
        name="invoice",
        description="Turn an order (JSON text) into an invoice line.",
    )


def run(server: OpenAIServer, tools: list[Any]) -> TaskOutput:
    model = LLM(
        model="openai/test-model",
        api_base=server.base_url,
        api_key="sk-test",
        retry_policy=FAST,
        timeout=10.0,
    )
    agent = Agent(role="Clerk", goal="Write invoices", tools=tools, llm=model)
    task = Task(description=f"Write the invoice line for this order: {ORDER}", agent=agent)
    return Ensemble(tasks=[task]).run().task_outputs[0]


def contents(request: dict[str, Any]) -> list[str]:
    """Every message text in one request body."""
    return [str(message.get("content") or "") for message in request["messages"]]


def test_three_steps_cost_one_tool_call_and_the_model_sees_only_the_final_output(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push_tool_calls([("invoice", {"input": ORDER})])
    openai_server.push_text(INVOICE)

    output = run(openai_server, [invoice_pipeline()])

    first, second = openai_server.requests  # the call, then the final answer: nothing between
    assert [spec["function"]["name"] for spec in first["tools"]] == ["invoice"]
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": second["messages"][-2]["tool_calls"][0]["id"],
        "content": INVOICE,
    }
    for request in (first, second):
        for text in contents(request):
            assert AMOUNTS not in text and TOTALS not in text  # intermediate outputs stay inside
    assert [(r.name, r.output, r.is_success) for r in output.tool_calls] == [
        ("invoice", INVOICE, True)
    ]
    assert (output.raw, output.llm_calls) == (INVOICE, 2)


def test_the_same_tools_given_separately_cost_two_more_model_requests(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push_tool_calls([("parse_order", {"order": ORDER})])
    openai_server.push_tool_calls([("compute_total", AMOUNTS)])
    openai_server.push_tool_calls([("format_invoice", TOTALS)])
    openai_server.push_text(INVOICE)

    output = run(openai_server, [parse_order, compute_total, format_invoice])

    requests = openai_server.requests
    assert len(requests) == 4  # a request per step, then the answer (the pipeline needs 2)
    assert [contents(request)[-1] for request in requests[1:]] == [AMOUNTS, TOTALS, INVOICE]
    assert [r.output for r in output.tool_calls] == [AMOUNTS, TOTALS, INVOICE]
    assert (output.raw, output.llm_calls) == (INVOICE, 4)


def test_an_immediate_pipeline_ends_the_task_after_a_single_model_request(
    openai_server: OpenAIServer,
) -> None:
    pipeline = invoice_pipeline()
    pipeline.return_behavior = ReturnBehavior.IMMEDIATE
    openai_server.push_tool_calls([("invoice", {"input": ORDER})])

    output = run(openai_server, [pipeline])

    assert len(openai_server.requests) == 1
    assert (output.raw, output.returned_immediately, output.llm_calls) == (INVOICE, True, 1)


def test_a_failing_step_reaches_the_model_as_the_pipelines_error(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push_tool_calls([("invoice", {"input": "not an order"})])
    openai_server.push_text("The order could not be read.")

    output = run(openai_server, [invoice_pipeline()])

    tool_message = openai_server.requests[1]["messages"][-1]
    assert (
        tool_message["content"]
        == "Error: JSONDecodeError: Expecting value: line 1 column 1 (char 0)"
    )
    assert output.tool_calls[0].is_success is False
    assert output.raw == "The order could not be read."
