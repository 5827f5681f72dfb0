"""The crew file served by ``serve-mcp`` / ``serve-a2a``: built afresh per call, read again per
call (an edit applies to the next call), parsed again only when its text changed."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agentensemble.cli import _serving
from agentensemble.config import _positions
from agentensemble.errors import ConfigurationError

CREW = """\
model: openai/unused
tasks:
  answer:
    description: Answer {question} in one line.
"""


def _factory(path: Path) -> object:
    return _serving.crew_factory(argparse.Namespace(crew=str(path), model="scripted"))


def test_every_call_is_a_fresh_ensemble_and_an_edit_applies_to_the_next_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crew = tmp_path / "crew.yaml"
    crew.write_text(CREW)
    parses: list[str] = []
    real = _positions.load_located

    def counting(text: str, source: str) -> object:
        parses.append(source)
        return real(text, source)

    monkeypatch.setattr(_positions, "load_located", counting)
    build = _factory(crew)
    first, second = build(), build()  # type: ignore[operator]
    assert first is not second and first.tasks[0] is not second.tasks[0]
    assert len(parses) == 1  # the text did not change: parsed once (at start)

    crew.write_text(CREW.replace("in one line", "in two lines"))
    edited = build()  # type: ignore[operator]
    assert "in two lines" in edited.tasks[0].description
    assert len(parses) == 2


def test_a_file_broken_after_start_fails_the_call_and_keeps_failing_until_fixed(
    tmp_path: Path,
) -> None:
    crew = tmp_path / "crew.yaml"
    crew.write_text(CREW)
    build = _factory(crew)
    crew.write_text("tasks: [unclosed\n")
    for _ in range(2):  # never the last good parse served for a file that changed
        with pytest.raises(ConfigurationError, match=r"crew\.yaml"):
            build()  # type: ignore[operator]
    crew.unlink()
    with pytest.raises(ConfigurationError, match="cannot read"):
        build()  # type: ignore[operator]
    crew.write_text(CREW)
    assert build().tasks  # type: ignore[operator]
