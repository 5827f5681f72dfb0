"""A crew file's folder is importable only while its references are imported.

``tools: [helpers_x:shout]`` names ``helpers_x.py`` beside the crew file. Its folder used to stay
on ``sys.path`` for the rest of the process, so any file there named like a module imported later
(a stdlib one, an installed one) won over the real one.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentensemble.config import load_crew
from agentensemble.testing import ScriptedChatModel, tool_call


@pytest.fixture
def unique() -> Iterator[str]:
    """A fresh module-name suffix; the modules made with it leave sys.modules afterwards."""
    suffix = uuid.uuid4().hex[:8]
    yield suffix
    for name in [name for name in sys.modules if name.endswith(suffix)]:
        del sys.modules[name]


def write_crew(folder: Path, unique: str) -> Path:
    """crew.yaml naming a tool and an output type in tools_<id>.py, which imports its sibling
    helpers_<id>.py at its top (as a module beside the crew file may)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"helpers_{unique}.py").write_text("def loud(text):\n    return text.upper() + '!'\n")
    (folder / f"tools_{unique}.py").write_text(
        textwrap.dedent(
            f"""
            from pydantic import BaseModel
            from agentensemble import tool
            from helpers_{unique} import loud

            @tool
            def shout(text: str) -> str:
                '''Shout the text.'''
                return loud(text)

            class Verdict(BaseModel):
                ok: bool
            """
        )
    )
    crew = folder / "crew.yaml"
    crew.write_text(
        textwrap.dedent(
            f"""
            agents:
              crier: {{role: Crier, goal: Shout, tools: ["tools_{unique}:shout"]}}
            tasks:
              shout:
                description: Shout hello
                agent: crier
                output_type: "tools_{unique}:Verdict"
            """
        )
    )
    return crew


def test_sys_path_is_unchanged_and_the_references_still_work(tmp_path: Path, unique: str) -> None:
    before = list(sys.path)
    ensemble = load_crew(write_crew(tmp_path / "crew", unique))
    assert sys.path == before

    model = ScriptedChatModel([tool_call("shout", {"text": "hello"}), '{"ok": true}'])
    ensemble.llm = model
    ensemble.tasks[0].agent.llm = model  # type: ignore[union-attr]
    output = ensemble.run()

    assert model.requests[1].tool_results == ["HELLO!"]  # the sibling import works too
    assert output.parsed.ok is True
    assert type(output.parsed).__name__ == "Verdict"
    assert sys.path == before


def test_a_crew_folder_already_on_sys_path_stays_there(
    tmp_path: Path, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path / "crew"))
    before = list(sys.path)
    load_crew(write_crew(tmp_path / "crew", unique))
    assert sys.path == before


@pytest.mark.parametrize("kind", ["stdlib", "installed"])
def test_a_file_beside_the_crew_file_does_not_shadow_later_imports(
    tmp_path: Path, unique: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if kind == "stdlib":
        name = "colorsys"  # a stdlib module no test imports first
        monkeypatch.delitem(sys.modules, name, raising=False)
    else:  # a module of a library found on sys.path, named as one beside the crew file
        name = f"library_{unique}"
        (tmp_path / "site").mkdir()
        (tmp_path / "site" / f"{name}.py").write_text("ORIGIN = 'the library'\n")
        monkeypatch.syspath_prepend(str(tmp_path / "site"))
    crew = write_crew(tmp_path / "crew", unique)
    (crew.parent / f"{name}.py").write_text("ORIGIN = 'the crew folder'\n")

    load_crew(crew)
    module = importlib.import_module(name)

    assert getattr(module, "ORIGIN", "the library") == "the library"
    assert Path(module.__file__ or "").parent != crew.parent
    monkeypatch.delitem(sys.modules, name, raising=False)
