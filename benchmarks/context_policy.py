"""What a context policy costs per model turn, at 10, 100 and 1,000 turns of conversation.

Usage: ``python benchmarks/context_policy.py [--repeats N]``.

The check before each model call (``ContextWindow.fit``) on a conversation that grows by one
tool call and its result per turn, under a window it never passes (the common case: counting
only) and under one it passes every few turns (placeholders for old results). Counted with
litellm's token counter (an ``LLM``) and with the character estimate (any other model). Each
message is tokenised once, so the cost of a turn must stay about flat as the conversation grows;
what grows is one dictionary lookup per message. Prints microseconds per turn (medians).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentensemble import LLM, ContextPolicy  # noqa: E402
from agentensemble.execution._window import ContextWindow  # noqa: E402
from agentensemble.testing import ScriptedChatModel  # noqa: E402

RESULT = "row, " * 100  # a 500-character tool result


def turn(n: int) -> list[dict[str, Any]]:
    call = {"id": f"c{n}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": f"{n}: {RESULT}"},
    ]


async def per_turn(model: Any, turns: int, window: int) -> float:
    """Microseconds of ``fit`` per turn, over the last tenth of a ``turns``-turn conversation."""

    async def no_summary(*_: Any) -> Any:
        raise AssertionError("no summary in this benchmark")

    policy = ContextPolicy(max_prompt_tokens=window, keep_tool_results=5)
    fitted = ContextWindow(
        policy,
        model=model,
        tools=None,
        task="bench",
        role="Reader",
        task_name=None,
        ask=no_summary,
        emitter=None,
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You read tables. " * 20},
        {"role": "user", "content": "Read every table."},
    ]
    measured = max(1, turns // 10)
    spent = 0.0
    for n in range(turns):
        messages.extend(turn(n))
        started = time.perf_counter()
        await fitted.fit(messages, 2)
        if n >= turns - measured:
            spent += time.perf_counter() - started
    return spent / measured * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    models = {"estimate": ScriptedChatModel([]), "litellm": LLM("openai/gpt-4o-mini")}
    print("| counter | window | 10 turns | 100 turns | 1,000 turns |")
    print("|---|---|---|---|---|")
    for label, model in models.items():
        for window, name in ((10_000_000, "never passed"), (20_000, "passed")):
            cells = []
            for turns in (10, 100, 1000):
                runs = [asyncio.run(per_turn(model, turns, window)) for _ in range(args.repeats)]
                cells.append(f"{statistics.median(runs):,.0f} µs")
            print(f"| {label} | {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
