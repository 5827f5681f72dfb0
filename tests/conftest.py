"""Shared test configuration: async tests run on asyncio through anyio's pytest plugin, and
property tests never fail on a busy machine's timing."""

import os

import pytest
from hypothesis import HealthCheck, settings

# Shared CI machines are slow and noisy: no per-example deadline, no "generation too slow" health
# check. Under CI the examples are derandomized, so a red run replays exactly on a developer's
# machine with ``CI=true``; locally each run explores fresh examples.
settings.register_profile(
    "agentensemble",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=bool(os.environ.get("CI")),
)
settings.load_profile("agentensemble")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["openai", "litellm"])
def model_lane(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test once per model lane: ``openai`` (straight to the endpoint, the default for
    ``openai/...`` models) and ``litellm`` (forced with ``AGENTENSEMBLE_LLM_LANE=litellm``).
    Suites that use it prove the two lanes indistinguishable."""
    lane: str = request.param
    if lane == "litellm":
        monkeypatch.setenv("AGENTENSEMBLE_LLM_LANE", "litellm")
    else:
        monkeypatch.delenv("AGENTENSEMBLE_LLM_LANE", raising=False)
    return lane
