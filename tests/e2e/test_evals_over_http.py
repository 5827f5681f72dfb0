"""Evaluations end to end against the local OpenAI-compatible server (real sockets, real LLM
clients): a dataset file, tool calls, cost, an LLM judge on its own model, a failing provider,
a regression between two models, and the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from openai_server import Fault, OpenAIServer, Reply, TextReply, ToolCallsReply

import agentensemble
from agentensemble import LLM, Agent, Ensemble, RetryPolicy, Task, tool
from agentensemble.evals import Dataset, EvalContext, LLMJudge, evaluate

pytestmark = pytest.mark.e2e

FAST = RetryPolicy(max_attempts=2, initial_backoff=0.001, max_backoff=0.01, jitter=0)
CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Australia": "Canberra"}
GUESSES = {"Australia": "Sydney"}
HASTY = ("gpt-4o",)  # the server's "hasty" model (priced, like gpt-4o-mini, the careful one)
REPO_ROOT = Path(agentensemble.__file__).absolute().parent.parent

DATASET = """\
name: capitals over http
evaluators:
  - Equals
  - Trajectory: {expected: [capital_of], mode: exact}
  - MaxTokens: 5000
  - MaxCost: 0.01
cases:
  - name: france
    inputs: {country: France}
    expected: The capital is Paris.
    evaluators:
      - ToolCalled: {name: capital_of, arguments: {country: France}, times: 1}
  - name: japan
    inputs: {country: Japan}
    expected: The capital is Tokyo.
  - name: australia
    inputs: {country: Australia}
    expected: The capital is Canberra.
"""


@tool
def capital_of(country: str) -> str:
    """The capital city of a country."""
    return CAPITALS.get(country, "unknown")


def _last_user(body: dict[str, Any]) -> str:
    return next(str(m["content"]) for m in reversed(body["messages"]) if m["role"] == "user")


def provider(body: dict[str, Any]) -> Reply:
    """A model behind HTTP: gpt-4o-mini looks capitals up, gpt-4o guesses some; the judge
    scores 1 when the answer names the expected city, and it is the only one asked as judge."""
    messages = body["messages"]
    if "You grade an AI system's answer" in str(messages[0]["content"]):
        prompt = _last_user(body)
        answer = prompt.split("<answer-", 1)[1].split(">", 1)[1].split("</answer-", 1)[0]
        expected = prompt.split("<expected-", 1)[1].split(">", 1)[1].split("</expected-", 1)[0]
        good = expected.strip().rsplit(" ", 1)[-1] in answer
        return TextReply(json.dumps({"score": 1.0 if good else 0.0, "reason": "checked city"}))
    country = _last_user(body).split("capital of ", 1)[1].split("?", 1)[0]
    if country == "Atlantis":
        return Fault.http(500, body="provider down")
    if messages[-1]["role"] == "tool":
        return TextReply(f"The capital is {messages[-1]['content']}.", usage=(200, 20))
    if body["model"] in HASTY and country in GUESSES:
        return TextReply(f"The capital is {GUESSES[country]}.", usage=(200, 20))
    return ToolCallsReply((("capital_of", json.dumps({"country": country})),), usage=(200, 20))


def llm(server: OpenAIServer, model: str = "openai/gpt-4o-mini") -> LLM:
    return LLM(model=model, api_base=server.base_url, api_key="sk-e2e", retry_policy=FAST)


def geographer(model: LLM) -> Ensemble:
    agent = Agent(role="Geographer", goal="Name capitals", tools=[capital_of], llm=model)
    task = Task(
        name="answer",
        description="What is the capital of {country}? Use the atlas.",
        expected_output="The capital is <city>.",
        agent=agent,
    )
    return Ensemble(tasks=[task])


@pytest.fixture
def dataset_file(tmp_path: Path) -> Path:
    path = tmp_path / "capitals.yaml"
    path.write_text(DATASET)
    return path


def test_a_dataset_file_passes_over_http_with_cost_and_a_judge(
    openai_server: OpenAIServer, dataset_file: Path
) -> None:
    openai_server.set_responder(provider)
    dataset = Dataset.from_file(dataset_file)
    judge = LLMJudge("Names the right capital", llm(openai_server, "openai/judge-model"), 0.5)

    def short(ctx: EvalContext) -> bool:
        return len(ctx.output.raw) < 40

    dataset = dataset.model_copy(update={"evaluators": [*dataset.evaluators, judge, short]})
    report = evaluate(lambda: geographer(llm(openai_server)), dataset, repeat=2, max_concurrency=3)
    assert report.passed, report.to_json()
    assert len(report.runs) == 6
    assert report.cost_usd is not None and report.cost_usd > 0  # a priced model: a real cost
    assert report.evaluator_pass_rates() == {
        "Equals": 1.0,
        "Trajectory": 1.0,
        "MaxTokens": 1.0,
        "MaxCost": 1.0,
        "LLMJudge": 1.0,
        "short": 1.0,
        "ToolCalled": 1.0,
    }
    judged = [r for r in openai_server.requests if r["model"] == "judge-model"]
    assert len(judged) == 6  # the judge's own model, once per run
    assert report.cases[0].runs[0].results["LLMJudge"].reason == "checked city"


def test_an_unknown_price_fails_max_cost_instead_of_counting_zero(
    openai_server: OpenAIServer, dataset_file: Path
) -> None:
    openai_server.set_responder(provider)
    dataset = Dataset.from_file(dataset_file).only("france")
    report = evaluate(lambda: geographer(llm(openai_server, "openai/test-model")), dataset)
    result = report.cases[0].runs[0].results["MaxCost"]
    assert not result.passed and "unknown" in result.reason


def test_a_failing_provider_fails_its_case_only(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    openai_server.set_responder(provider)
    path = tmp_path / "d.yaml"
    path.write_text(
        "cases:\n"
        "  - {name: atlantis, inputs: {country: Atlantis}}\n"
        "  - {name: japan, inputs: {country: Japan}, evaluators: [{Contains: Tokyo}]}\n"
    )
    report = evaluate(lambda: geographer(llm(openai_server)), Dataset.from_file(path))
    atlantis, japan = report.cases
    assert not atlantis.passed and "500" in (atlantis.runs[0].error or "")
    assert "sk-e2e" not in report.to_json()  # the key never reaches the report
    assert japan.passed


def test_a_model_change_that_regresses_is_caught_and_shown(
    openai_server: OpenAIServer, dataset_file: Path, tmp_path: Path
) -> None:
    openai_server.set_responder(provider)
    dataset = Dataset.from_file(dataset_file)
    baseline = evaluate(lambda: geographer(llm(openai_server)), dataset)
    changed = evaluate(lambda: geographer(llm(openai_server, "openai/gpt-4o")), dataset)
    diff = changed.compare(baseline)
    assert diff.regressions == ["australia"] and diff.improvements == [] and not diff.ok
    reasons = changed.case("australia").runs[0].results
    assert "Sydney" in reasons["Equals"].reason and not reasons["Trajectory"].passed
    page = changed.to_html(baseline)
    assert "regressed: runs passed: 1/1 -&gt; 0/1" in page


def test_the_command_line_over_http(
    openai_server: OpenAIServer, dataset_file: Path, tmp_path: Path
) -> None:
    openai_server.set_responder(provider)
    (tmp_path / "geo_tools.py").write_text(
        "from agentensemble import tool\n\n"
        f"CAPITALS = {CAPITALS!r}\n\n"
        "@tool\ndef capital_of(country: str) -> str:\n"
        '    """The capital city of a country."""\n'
        "    return CAPITALS.get(country, 'unknown')\n"
    )
    crew = tmp_path / "crew.yaml"
    crew.write_text(
        textwrap.dedent(
            """\
            model: openai/gpt-4o-mini
            agents:
              geographer: {role: Geographer, goal: Name capitals, tools: [geo_tools:capital_of]}
            tasks:
              answer:
                description: What is the capital of {country}? Use the atlas.
                expected_output: The capital is <city>.
                agent: geographer
            """
        )
    )
    env = {k: v for k, v in os.environ.items() if k != "AGENTENSEMBLE_MODEL"}
    env.update(
        OPENAI_BASE_URL=openai_server.base_url, OPENAI_API_KEY="sk-e2e", PYTHONPATH=str(REPO_ROOT)
    )
    command = [sys.executable, "-m", "agentensemble", "eval", str(crew), str(dataset_file)]
    done = subprocess.run(
        [*command, "--save", str(tmp_path / "base.json")],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASSED: 3/3 cases (100%)" in done.stdout
    regressed = subprocess.run(
        [*command, "--model", "openai/gpt-4o", "--baseline", str(tmp_path / "base.json")],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert regressed.returncode == 1, regressed.stdout + regressed.stderr
    assert "regressed: australia (runs passed: 1/1 -> 0/1)" in regressed.stdout
