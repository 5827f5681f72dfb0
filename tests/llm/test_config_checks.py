"""Settings that cannot work are named before the first request: missing keys, bad base URLs."""

from __future__ import annotations

import pytest

from agentensemble import LLM, Agent, Ensemble, Task
from agentensemble.errors import ConfigurationError
from agentensemble.llm._config_checks import (
    api_base_problem,
    base_url_problem,
    missing_key_problem,
    provider_of,
)


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("openai/gpt-4o-mini", "openai"),
        ("Anthropic/claude-3-5-sonnet", "anthropic"),
        ("azure/my-deployment", "azure"),
        ("gpt-4o-mini", "openai"),
        ("o3-mini", "openai"),
        ("claude-3-5-sonnet-latest", "anthropic"),
        ("ollama/llama3.1", "ollama"),
        ("some-local-model", None),
    ],
)
def test_provider_of_reads_the_prefix_or_a_bare_name(model: str, provider: str | None) -> None:
    assert provider_of(model) == provider


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("http://127.0.0.1:8000/v1", None),
        ("https://api.example.com", None),
        (
            "localhost:11434",
            "has no scheme; write it as a full URL such as 'http://localhost:11434'",
        ),
        ("127.0.0.1:8000/v1", "'http://127.0.0.1:8000/v1'"),
        ("ftp://files.example.com", "is not an http:// or https:// URL with a host"),
        ("http://", "is not an http:// or https:// URL with a host"),
    ],
)
def test_api_base_problem_names_the_setting_and_the_fix(value: str, problem: str | None) -> None:
    found = api_base_problem(value)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found and found.startswith("api_base=")


KEY_CASES = [
    # model, has api_key=, extra, environment, variable named in the problem (None = fine)
    ("openai/gpt-4o-mini", False, {}, {}, "OPENAI_API_KEY"),
    ("openai/gpt-4o-mini", True, {}, {}, None),
    ("openai/gpt-4o-mini", False, {}, {"OPENAI_API_KEY": "sk-env-key-123"}, None),
    ("openai/gpt-4o-mini", False, {"api_key": "sk-extra-123"}, {}, None),
    ("gpt-4o-mini", False, {}, {}, "OPENAI_API_KEY"),
    ("anthropic/claude-3-5-sonnet", False, {}, {"OPENAI_API_KEY": "x" * 10}, "ANTHROPIC_API_KEY"),
    ("gemini/gemini-2.0-flash", False, {}, {}, "GEMINI_API_KEY or GOOGLE_API_KEY"),
    ("gemini/gemini-2.0-flash", False, {}, {"GOOGLE_API_KEY": "AIza-something"}, None),
    ("openrouter/x", False, {}, {"OR_API_KEY": "or-key-123"}, None),
    ("azure/deployment", False, {}, {}, None),  # Azure has other ways in: not demanded
    ("ollama/llama3.1", False, {}, {}, None),  # no key needed
    ("some-local-model", False, {}, {}, None),  # unknown: the call itself will say
]


@pytest.mark.parametrize(("model", "has_key", "extra", "env", "variable"), KEY_CASES)
def test_missing_key_problem_names_the_environment_variable(
    model: str, has_key: bool, extra: dict[str, str], env: dict[str, str], variable: str | None
) -> None:
    problem = missing_key_problem(model, has_key=has_key, extra=extra, environ=env)
    if variable is None:
        assert problem is None
    else:
        assert problem is not None
        assert f"set {variable} in the environment" in problem
        assert "api_key=" in problem


def test_a_local_server_behind_the_openai_prefix_is_told_any_key_will_do() -> None:
    problem = missing_key_problem(
        "openai/local", has_key=False, extra={}, api_base="http://127.0.0.1:8000/v1", environ={}
    )
    assert problem is not None and "any value will do" in problem


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({}, None),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}, None),
        ({"OPENAI_BASE_URL": "127.0.0.1:8000/v1"}, "environment variable OPENAI_BASE_URL="),
        ({"OPENAI_API_BASE": "localhost:1234"}, "environment variable OPENAI_API_BASE="),
    ],
)
def test_a_base_url_from_the_environment_is_checked_too(
    env: dict[str, str], problem: str | None
) -> None:
    found = base_url_problem("openai/gpt-4o-mini", environ=env)
    assert (found is None) if problem is None else (found is not None and problem in found)
    assert base_url_problem("anthropic/claude", environ=env) is None


def test_an_api_base_without_scheme_is_refused_when_the_llm_is_built() -> None:
    with pytest.raises(ValueError, match=r"api_base='localhost:11434' has no scheme"):
        LLM("ollama/llama3.1", api_base="localhost:11434")


def test_a_missing_key_fails_the_run_before_any_model_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    ensemble = Ensemble(
        tasks=[Task(description="Say hi", agent=Agent(role="R", goal="G", llm="openai/gpt-4o"))]
    )
    with pytest.raises(ConfigurationError, match=r"task 1 .*set OPENAI_API_KEY in the environment"):
        ensemble.run()


def test_a_bad_base_url_in_the_environment_fails_the_run_before_any_model_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-123")
    monkeypatch.setenv("OPENAI_BASE_URL", "127.0.0.1:9/v1")
    ensemble = Ensemble(tasks=[Task(description="Say hi")], llm="openai/gpt-4o-mini")
    with pytest.raises(ConfigurationError, match="environment variable OPENAI_BASE_URL"):
        ensemble.run()


async def _complete(llm: LLM) -> None:
    await llm.complete([{"role": "user", "content": "hi"}])


@pytest.mark.anyio
async def test_complete_itself_checks_before_sending(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        await _complete(LLM("anthropic/claude-3-5-sonnet-latest"))
