"""docs/security.md names a test for every defence: each one it names must exist."""

from __future__ import annotations

import re
from pathlib import Path

import agentensemble

REPO = Path(agentensemble.__file__).absolute().parent.parent
DOC = REPO / "docs" / "security.md"


def test_every_test_the_threat_model_names_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing: list[str] = []
    for cell in re.findall(r"`([^`]*(?:tests/|::)[^`]*)`", text):
        for file, name in re.findall(r"(tests/[\w/]+\.py)?(?:::(\w+))?", cell):
            if file:
                current = REPO / file
                if not current.exists():
                    missing.append(file)
            if name and not re.search(rf"def {name}\(", current.read_text(encoding="utf-8")):
                missing.append(f"{current.relative_to(REPO)}::{name}")
    assert missing == []
    assert len(re.findall(r"::test_\w+", text)) > 40
