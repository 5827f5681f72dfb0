"""The docs extractor: python fences only, the marker on the line before, indentation undone."""

from __future__ import annotations

from pathlib import Path

from ._blocks import blocks_of, doc_files

DOC = """# Title

```python
print("plain")
```

<!-- no-run -->
```python
signature(a, b)
```

<!-- scaffold: pipeline-tools -->

```py
invoice
```

```bash
agentensemble run crew.yaml
```

- a list item with code:

  <!-- continue -->
  ```python
  x = 1
  ```
"""


def test_python_blocks_with_their_lines_and_markers(tmp_path: Path) -> None:
    path = tmp_path / "docs" / "page.md"
    path.parent.mkdir()
    path.write_text(DOC)

    blocks = blocks_of(path, tmp_path)

    assert [(b.where, b.marker) for b in blocks] == [
        ("docs/page.md:3", None),
        ("docs/page.md:8", "no-run"),
        ("docs/page.md:14", "scaffold: pipeline-tools"),
        ("docs/page.md:25", "continue"),
    ]
    assert blocks[0].code == 'print("plain")\n'
    assert blocks[1].no_run and blocks[2].scaffold == "pipeline-tools" and blocks[3].continues
    assert blocks[3].code == "x = 1\n"


def test_every_docs_page_is_found_without_a_list(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# r\n")
    for name in ("b.md", "a.md"):
        (tmp_path / "docs" / name).write_text("# x\n")
    assert [p.name for p in doc_files(tmp_path)] == ["README.md", "a.md", "b.md"]
