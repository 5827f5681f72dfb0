"""Shared test configuration: async tests run on asyncio through anyio's pytest plugin, and
property tests never fail on a busy machine's timing."""

import os
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

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


# -- crew files (tests/cli, tests/config): a temporary folder with a tools module beside them

TOOLS_MODULE = '''
from pydantic import BaseModel

from agentensemble import GuardrailResult, tool


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


class Verdict(BaseModel):
    ok: bool


def always_fails(output):
    return GuardrailResult.failure("never good enough")


NOT_A_TOOL = 42
'''


@pytest.fixture
def crew_file(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Write a crew file (and ``yaml_tools.py`` beside it); yields a function text -> path."""
    (tmp_path / "yaml_tools.py").write_text(TOOLS_MODULE)

    def write(text: str, name: str = "crew.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return path

    yield write
    sys.modules.pop("yaml_tools", None)
    if str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))
