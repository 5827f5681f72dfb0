"""Cost from litellm's bundled price table: read locally (litellm not even imported), None for
an unknown model and never a made-up 0; task and run totals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentensemble import Agent, ChatResponse, Ensemble, Task, TokenUsage
from agentensemble.llm.cost import add_costs, cost_usd
from agentensemble.testing import FunctionChatModel, ScriptedChatModel


def bundled_price(model: str) -> tuple[float, float]:
    import importlib.util

    spec = importlib.util.find_spec("litellm")
    assert spec is not None and spec.submodule_search_locations
    path = Path(spec.submodule_search_locations[0]) / "model_prices_and_context_window_backup.json"
    entry = json.loads(path.read_text(encoding="utf-8"))[model]
    return entry["input_cost_per_token"], entry["output_cost_per_token"]


USAGE = TokenUsage(prompt_tokens=1000, completion_tokens=500, total_tokens=1500)


@pytest.mark.parametrize("name", ["gpt-4o-mini", "openai/gpt-4o-mini"])
def test_a_known_model_is_priced_from_the_bundled_table(name: str) -> None:
    prompt, completion = bundled_price("gpt-4o-mini")

    assert cost_usd(USAGE, name) == pytest.approx(1000 * prompt + 500 * completion)


@pytest.mark.parametrize("names", [("scripted",), ("openai/test-model",), (None,), ()])
def test_an_unknown_model_costs_none_not_zero(names: tuple[str | None, ...]) -> None:
    assert cost_usd(USAGE, *names) is None


def test_the_first_known_name_wins() -> None:
    assert cost_usd(USAGE, "function", "gpt-4o-mini") == cost_usd(USAGE, "gpt-4o-mini")


@pytest.mark.parametrize(
    ("costs", "total"),
    [([0.5, 0.25], 0.75), ([0.5, None], None), ([], None), ([0.0], 0.0)],
)
def test_adding_costs_is_unknown_as_soon_as_one_is(
    costs: list[float | None], total: float | None
) -> None:
    assert add_costs(costs) == total


def test_pricing_reads_the_local_file_without_importing_litellm() -> None:
    code = (
        "import sys\n"
        "from agentensemble.llm.cost import cost_usd\n"
        "from agentensemble import TokenUsage\n"
        "assert cost_usd(TokenUsage(prompt_tokens=10), 'gpt-4o-mini') > 0\n"
        "print('litellm' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "False"


def priced_model(answer: str, model: str) -> FunctionChatModel:
    return FunctionChatModel(
        lambda messages, tools: ChatResponse(
            content=answer, usage=USAGE, finish_reason="stop", model=model
        )
    )


def test_task_and_run_costs_add_up_and_an_unknown_model_makes_the_total_unknown() -> None:
    one = Task(
        description="One", agent=Agent(role="A", goal="g", llm=priced_model("1", "gpt-4o-mini"))
    )
    two = Task(description="Two", agent=Agent(role="B", goal="g", llm=priced_model("2", "gpt-4o")))
    output = Ensemble(tasks=[one, two]).run()

    costs = [o.cost_usd for o in output.task_outputs]
    assert costs == [cost_usd(USAGE, "gpt-4o-mini"), cost_usd(USAGE, "gpt-4o")]
    assert output.cost_usd == pytest.approx(sum(c for c in costs if c is not None))
    assert output.trace is not None and output.trace.cost_usd == output.cost_usd

    three = Task(description="Three", agent=Agent(role="C", goal="g", llm=ScriptedChatModel(["3"])))
    mixed = Ensemble(tasks=[one, three]).run()
    assert mixed.task_outputs[1].cost_usd is None
    assert mixed.cost_usd is None


def test_prices_follow_litellms_table_once_it_is_loaded_and_changes_made_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lookups in the bundled table are kept; once litellm is loaded its table is the one
    read, and a model a user registers (or re-prices) there counts at once."""
    from types import SimpleNamespace

    from agentensemble.llm import cost

    prompt, completion = bundled_price("gpt-4o-mini")
    assert cost_usd(USAGE, "gpt-4o-mini") == pytest.approx(1000 * prompt + 500 * completion)
    assert cost_usd(USAGE, "gpt-4o-mini") == pytest.approx(1000 * prompt + 500 * completion)

    table: dict[str, object] = {
        "gpt-4o-mini": {"input_cost_per_token": 1.0, "output_cost_per_token": 2.0}
    }
    monkeypatch.setattr(cost, "is_loaded", lambda: True)
    monkeypatch.setattr(cost, "load_litellm", lambda: SimpleNamespace(model_cost=table))
    assert cost_usd(USAGE, "gpt-4o-mini") == 2000.0
    assert cost_usd(USAGE, "mine") is None
    table["mine"] = {"input_cost_per_token": 0.5, "output_cost_per_token": 0.0}  # registered
    table["gpt-4o-mini"] = {"input_cost_per_token": 3.0, "output_cost_per_token": 0.0}
    assert cost_usd(USAGE, "mine") == 500.0
    assert cost_usd(USAGE, "gpt-4o-mini") == 3000.0

    monkeypatch.undo()
    assert cost_usd(USAGE, "gpt-4o-mini") == pytest.approx(1000 * prompt + 500 * completion)


def test_odd_model_names_are_priced_as_unknown_every_time() -> None:
    for _ in range(2):
        assert cost_usd(USAGE, ["not", "a", "name"], {"x": 1}) is None  # unhashable
        assert cost_usd(USAGE, 7, "") is None
    assert cost_usd(USAGE, ["odd"], "gpt-4o-mini") == cost_usd(USAGE, "gpt-4o-mini")


def test_many_model_names_keep_their_prices() -> None:
    for number in range(300):  # more names than lookups are kept
        assert cost_usd(USAGE, f"made-up-{number}") is None
    assert cost_usd(USAGE, "gpt-4o-mini") == cost_usd(USAGE, "openai/gpt-4o-mini")
