"""Python code blocks of README.md and docs/*.md, with the marker written before each.

A marker is an HTML comment on the line right before the fence (blank lines between allowed):
``<!-- no-run -->`` (cannot run offline: kept rare), ``<!-- scaffold: NAME -->`` (run after the
setup named NAME in tests/docs/scaffolds.py), ``<!-- continue -->`` (run in the namespace the
previous block of the same file left).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_FENCE_OPEN = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)")
_MARKER = re.compile(r"^\s*<!--\s*(?P<body>[^>]*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One python block: where it is, its code, and its marker (or None)."""

    file: Path
    line: int  # 1-based line of the opening fence
    code: str
    marker: str | None

    @property
    def where(self) -> str:
        return f"{self.file.as_posix()}:{self.line}"

    @property
    def no_run(self) -> bool:
        return self.marker == "no-run"

    @property
    def continues(self) -> bool:
        return self.marker == "continue"

    @property
    def scaffold(self) -> str | None:
        if self.marker and self.marker.startswith("scaffold:"):
            return self.marker.split(":", 1)[1].strip()
        return None


def blocks_of(path: Path, root: Path) -> list[Block]:
    """Every fenced python block of ``path`` (named relative to ``root``)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE_OPEN.match(lines[index])
        if not opening:
            index += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        start = index
        index += 1
        body: list[str] = []
        while index < len(lines) and not lines[index].strip().startswith(fence):
            body.append(lines[index][indent:] if lines[index][:indent].isspace() else lines[index])
            index += 1
        index += 1  # the closing fence
        if opening["lang"].lower() not in ("python", "py", "python3"):
            continue
        found.append(
            Block(
                file=path.relative_to(root),
                line=start + 1,
                code="\n".join(body) + "\n",
                marker=_marker_before(lines, start),
            )
        )
    return found


def _marker_before(lines: list[str], fence_index: int) -> str | None:
    index = fence_index - 1
    while index >= 0 and not lines[index].strip():
        index -= 1
    if index < 0:
        return None
    found = _MARKER.match(lines[index])
    return found["body"].strip() if found else None


def doc_files(root: Path) -> list[Path]:
    """README.md and every docs/*.md, found afresh each run (new docs are picked up)."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


__all__ = ["Block", "blocks_of", "doc_files"]
