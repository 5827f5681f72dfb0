"""docs/serve.md's in-process round trips run as a reader pastes them: with no API key and no
local provider (``tests/docs`` runs every block against one), on their scripted models."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentensemble

from ._blocks import Block, blocks_of

ROOT = Path(agentensemble.__file__).absolute().parent.parent
PAGE = ROOT / "docs" / "serve.md"


def _block(*marks: str) -> Block:
    (found,) = [b for b in blocks_of(PAGE, ROOT) if all(mark in b.code for mark in marks)]
    return found


@pytest.mark.parametrize(
    ("marks", "printed"),
    [
        (("a2a_app(", "ASGITransport"), "Tides are the sea rising and falling twice a day."),
        (('"session": "ticket-7"',), "Your name is Ada."),
    ],
    ids=["a2a-round-trip", "mcp-session"],
)
def test_the_block_runs_offline_as_pasted(
    marks: tuple[str, ...],
    printed: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENTENSEMBLE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    block = _block(*marks)
    assert not block.no_run and block.scaffold is None and not block.continues
    exec(compile(block.code, block.where, "exec"), {"__name__": "__docs__"})
    assert printed in capsys.readouterr().out
