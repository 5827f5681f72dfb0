"""``agentensemble durable reviews RUN``: one line per pending review that names what
is to be approved (the tool and its arguments, or the task and its output) and the prompt, with
every character a model chose escaped: no fake rows, no fake columns, no terminal control."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("dbos")

from agentensemble.cli._durable_actions import review_row


def review(request: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"review_id": "run-1:7", "state": "pending", "request": request, **extra}


@pytest.mark.parametrize(
    ("listed", "row"),
    [
        (
            review(
                {
                    "timing": "during_execution",
                    "tool_name": "send_money",
                    "output": '{"to": "ann", "amount": 50}',
                    "prompt": "Approve this transfer?",
                }
            ),
            'run-1:7\tduring_execution\ttool: send_money\targuments: {"to": "ann", "amount": 50}'
            "\tprompt: Approve this transfer?",
        ),
        (
            review({"timing": "after_execution", "task_description": "Draft", "output": "Hi"}),
            "run-1:7\tafter_execution\ttask: Draft\toutput: Hi",
        ),
        (  # the model's text tries to print a second, harmless-looking review as a row
            review(
                {
                    "timing": "during_execution",
                    "tool_name": "delete_all",
                    "output": '{"x": "1"}\nrun-1:8\tduring_execution\ttool: read_file',
                    "prompt": "ok?\r\x1b[2Kfine",
                }
            ),
            'run-1:7\tduring_execution\ttool: delete_all\targuments: {"x": "1"}\\nrun-1:8'
            "\\tduring_execution\\ttool: read_file\tprompt: ok?\\r\\x1b[2Kfine",
        ),
        (
            review({"timing": "after_execution", "output": "x"}, deadline=time.time() - 5),
            "run-1:7\tafter_execution\ttask: \toutput: x\tTIMED OUT: can no longer be decided",
        ),
        (review({}), "run-1:7\t\ttask: \toutput: "),
    ],
)
def test_a_pending_review_is_one_escaped_row(listed: dict[str, Any], row: str) -> None:
    shown = review_row(listed)
    assert shown == row
    assert "\n" not in shown
