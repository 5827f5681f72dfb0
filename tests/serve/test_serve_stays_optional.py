"""Serving stays optional: ``import agentensemble`` loads no serving code and no extra;
``agentensemble.serve`` loads a protocol's SDK only when its name is used; a crew file's
``review: mcp`` needs no SDK until a call is served."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentensemble.config import load_crew
from agentensemble.serve import MCPReviewHandler

HEAVY = ("mcp", "a2a", "agentensemble.serve", "starlette", "uvicorn", "litellm")


def loaded_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return eval(done.stdout.strip())  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("code", "loaded"),
    [
        ("import agentensemble", []),
        ("import agentensemble.serve", ["agentensemble.serve"]),
        ("from agentensemble.serve import MCPReviewHandler", ["agentensemble.serve"]),
        (
            "from agentensemble.serve import mcp_server",
            ["agentensemble.serve", "mcp", "starlette", "uvicorn"],  # the mcp package's own
        ),
        ("from agentensemble.serve import A2AAgent", ["agentensemble.serve"]),  # a2a: first call
        (
            "from agentensemble.serve import a2a_app",
            ["a2a", "agentensemble.serve", "starlette", "uvicorn"],  # sse-starlette's
        ),
    ],
)
def test_what_each_import_loads(code: str, loaded: list[str]) -> None:
    assert loaded_after(code) == loaded


def test_a_crew_files_review_mcp_is_the_mcp_review_handler() -> None:
    ensemble = load_crew(
        {
            "model": "openai/x",
            "review": {"policy": "after_last_task", "handler": "mcp"},
            "tasks": {"t": {"description": "Do {x}"}},
        }
    )
    assert isinstance(ensemble.review_handler, MCPReviewHandler)


def test_an_unknown_name_is_an_attribute_error() -> None:
    import agentensemble.serve as serve

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        serve.nope  # noqa: B018
