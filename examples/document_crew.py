"""A document crew: a clerk reads an invoice (a PDF) and a receipt (an image) and answers with a
typed record; a checker compares it with the receipt a tool fetches.

The files ship beside this script (``examples/documents/``). With no API key it runs offline on a
scripted model that reads what it was sent (and says so); with ``OPENAI_API_KEY`` set it uses
``openai/gpt-4o-mini``, which takes images and PDFs; ``AGENTENSEMBLE_MODEL`` names any litellm
model (one that cannot take a PDF or an image is refused before any request, naming the part).
"""

from __future__ import annotations

import json
from pathlib import Path

from _model_choice import choose_model
from pydantic import BaseModel

from agentensemble import Agent, ChatModel, Document, Ensemble, Image, Task, tool
from agentensemble.llm.types import ATTACHMENTS_KEY, Message
from agentensemble.testing import FunctionChatModel, tool_call

HERE = Path(__file__).parent / "documents"


class Invoice(BaseModel):
    number: str
    supplier: str
    total: float
    currency: str


@tool
def receipt_scan() -> list[object]:
    """The scan of the payment receipt for the invoice being checked."""
    return ["The receipt scan:", Image(path=HERE / "receipt.png")]


def seen(messages: list[Message]) -> list[str]:
    """What a model was shown: the attachments' descriptions, never their bytes."""
    return [repr(a) for m in messages for a in m.get(ATTACHMENTS_KEY) or ()]


def offline_answer(messages: list[Message], tools: object) -> object:
    """The scripted model's turns: a real model would read the PDF and the images."""
    shown = seen(messages)
    if shown:
        print(f"  (the offline model was sent {', '.join(shown)})")
    if tools and not any(m["role"] == "tool" for m in messages):
        return tool_call("receipt_scan")
    if tools:
        return "The receipt matches invoice 2041: 118.00 EUR paid."
    invoice = Invoice(
        number="2041", supplier="Harbour Office Supplies", total=118.0, currency="EUR"
    )
    return json.dumps(invoice.model_dump())


def build(model: str | ChatModel) -> Ensemble:
    clerk = Agent(role="Clerk", goal="Read invoices exactly")
    checker = Agent(role="Checker", goal="Check payments against invoices", tools=[receipt_scan])
    read = Task(
        description="Read {invoice} and give its number, supplier, total and currency.",
        agent=clerk,
        output_type=Invoice,
    )
    check = Task(
        description="Fetch the receipt scan and say whether it pays the invoice in full.",
        expected_output="One sentence",
        agent=checker,
        context=[read],
    )
    return Ensemble(tasks=[read, check], llm=model)


def main() -> int:
    model, banner = choose_model(FunctionChatModel(offline_answer))
    print(banner)
    result = build(model).run(inputs={"invoice": Document(path=HERE / "invoice.pdf")})
    invoice = result.task_outputs[0].parsed
    print(f"Invoice: {invoice!r}")
    print(f"Check: {result.raw}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
