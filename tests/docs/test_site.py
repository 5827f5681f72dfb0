"""The docs site builds (MkDocs, warnings as errors) and its reference covers every public name.

There is no ``nav:`` list in mkdocs.yml: every page of docs/ is in the site by itself, so a new
guide needs no registration; the reference renders ``agentensemble`` (and the review, web and
testing packages) from their ``__all__``, so a new public name is documented by its docstring.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings_handlers.python")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return out


def test_every_page_of_docs_is_in_the_site_without_a_nav_list(site: Path) -> None:
    assert not re.search(r"^nav:", (ROOT / "mkdocs.yml").read_text(), re.MULTILINE)
    for page in (ROOT / "docs").glob("*.md"):
        built = site / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert built.exists(), page.name


@pytest.mark.parametrize("package", ["agentensemble", "agentensemble_review", "agentensemble_web"])
def test_the_reference_documents_every_public_name(site: Path, package: str) -> None:
    html = (site / "reference" / "index.html").read_text()
    names = [name for name in importlib.import_module(package).__all__ if not name.startswith("_")]
    missing = [name for name in names if f'id="{package}.{name}"' not in html]
    assert not missing, f"not in the API reference: {missing}"


def test_events_outputs_and_errors_have_their_own_sections(site: Path) -> None:
    html = (site / "reference" / "index.html").read_text()
    for anchor in (
        "agentensemble.events.TaskStarted",
        "agentensemble.outputs.TaskOutput",
        "agentensemble.errors.TaskExecutionError",
        "agentensemble.testing.OpenAICompatibleServer",
    ):
        assert f'id="{anchor}"' in html, anchor
