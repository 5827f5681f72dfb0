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
