"""FileRead, FileWrite, ListDirectory against a tree that changes under them (Linux).

Another process, or the model itself through another tool such as RunCommand, can swap a
directory under the root for a symlink pointing outside at any moment, in particular between a
check of the path and its use. The tools open each component from the root's descriptor with
``O_NOFOLLOW``, so whenever the swap lands, nothing outside the root is read, written or listed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from builtin_helpers import call, refused

from agentensemble.tools.builtin import FileRead, FileWrite, ListDirectory


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Path]:
    """root/sub/deep.txt inside; outside/ beside the root holds a secret, a file named like
    deep.txt and a folder named like the inside one."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub" / "inner").mkdir(parents=True)
    (root / "sub" / "deep.txt").write_text("deep")
    (outside / "inner").mkdir(parents=True)
    (outside / "deep.txt").write_text("TOP SECRET")
    (outside / "secret-listing-marker").write_text("")
    yield root


def _outside_untouched(root: Path) -> None:
    outside = root.parent / "outside"
    assert sorted(p.name for p in outside.iterdir()) == [
        "deep.txt",
        "inner",
        "secret-listing-marker",
    ]
    assert (outside / "deep.txt").read_text() == "TOP SECRET"
    assert list((outside / "inner").iterdir()) == []


def _swap_sub_for_a_link_out(root: Path) -> None:
    """What the attacker does: root/sub moves away, root/sub becomes a symlink to outside/."""
    (root / "sub").rename(root / "sub-moved")
    (root / "sub").symlink_to(root.parent / "outside", target_is_directory=True)


def _swap_before_call(
    monkeypatch: pytest.MonkeyPatch, root: Path, number: int
) -> Callable[[], bool]:
    """Swap just before the tool's ``number``-th filesystem call (os.open or os.scandir),
    i.e. after every check the tool made before that call. Returns "did the swap happen"."""
    calls = {"count": 0, "swapped": False}
    real_open, real_scandir = os.open, os.scandir

    def maybe_swap() -> None:
        calls["count"] += 1
        if calls["count"] == number and not calls["swapped"]:
            _swap_sub_for_a_link_out(root)
            calls["swapped"] = True

    def hooked_open(*args: Any, **kwargs: Any) -> int:
        maybe_swap()
        return real_open(*args, **kwargs)

    def hooked_scandir(*args: Any, **kwargs: Any) -> Any:
        maybe_swap()
        return real_scandir(*args, **kwargs)

    monkeypatch.setattr(os, "open", hooked_open)
    monkeypatch.setattr(os, "scandir", hooked_scandir)
    return lambda: bool(calls["swapped"])


def test_a_parent_swapped_for_a_symlink_after_the_check_cannot_be_read_through(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    swapped = _swap_before_call(monkeypatch, tree, 1)
    result = call(FileRead(tree), path="sub/deep.txt")
    assert swapped()
    assert refused(result, "'sub'", "symlink")
    assert "TOP SECRET" not in (result.output or "")


def test_a_parent_swapped_for_a_symlink_after_the_check_cannot_be_written_through(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    swapped = _swap_before_call(monkeypatch, tree, 1)
    result = call(FileWrite(tree, requires_approval=False), path="sub/deep.txt", content="pwned")
    assert swapped()
    assert refused(result, "'sub'", "symlink")
    _outside_untouched(tree)


def test_a_parent_swapped_for_a_symlink_cannot_receive_new_folders_or_files(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    swapped = _swap_before_call(monkeypatch, tree, 1)
    writer = FileWrite(tree, requires_approval=False)
    result = call(writer, path="sub/inner/new/file.txt", content="pwned")
    assert swapped()
    assert refused(result, "'sub'", "symlink")
    _outside_untouched(tree)


def test_a_parent_swapped_for_a_symlink_after_the_check_cannot_be_listed(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    swapped = _swap_before_call(monkeypatch, tree, 1)
    result = call(ListDirectory(tree), path="sub")
    assert swapped()
    assert refused(result, "'sub'", "symlink")
    assert "secret-listing-marker" not in (result.output or "")


TOOLS: list[tuple[str, Callable[[Path], Any], dict[str, Any]]] = [
    ("read", FileRead, {"path": "sub/deep.txt"}),
    (
        "write",
        lambda root: FileWrite(root, requires_approval=False),
        {"path": "sub/deep.txt", "content": "pwned"},
    ),
    (
        "write-new-folders",
        lambda root: FileWrite(root, requires_approval=False),
        {"path": "sub/inner/a/b.txt", "content": "pwned"},
    ),
    ("list", ListDirectory, {"path": "sub/inner"}),
]


@pytest.mark.parametrize("number", range(1, 7))
@pytest.mark.parametrize(("kind", "make", "arguments"), TOOLS, ids=[t[0] for t in TOOLS])
def test_wherever_the_swap_lands_nothing_outside_the_root_is_touched(
    tree: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    make: Callable[[Path], Any],
    arguments: dict[str, Any],
    number: int,
) -> None:
    tool = make(tree)
    _swap_before_call(monkeypatch, tree, number)
    result = call(tool, **arguments)
    assert "TOP SECRET" not in (result.output or "")
    assert "secret-listing-marker" not in (result.output or "")
    _outside_untouched(tree)
    if result.is_success and kind.startswith("write"):  # it wrote into the moved folder
        moved_or_not = tree / "sub-moved" if (tree / "sub-moved").exists() else tree / "sub"
        assert "pwned" in (moved_or_not / arguments["path"].removeprefix("sub/")).read_text()


SYMLINKED = [
    ("read", FileRead, {"path": "linked/deep.txt"}),
    (
        "write",
        lambda root: FileWrite(root, requires_approval=False),
        {"path": "linked/new.txt", "content": "x"},
    ),
    ("list", ListDirectory, {"path": "linked"}),
]


@pytest.mark.parametrize(("kind", "make", "arguments"), SYMLINKED, ids=[t[0] for t in SYMLINKED])
def test_a_symlink_already_in_the_path_is_never_followed_even_inside_the_root(
    tree: Path, kind: str, make: Callable[[Path], Any], arguments: dict[str, Any]
) -> None:
    (tree / "linked").symlink_to(tree / "sub", target_is_directory=True)
    result = call(make(tree), **arguments)
    assert refused(result, "'linked' is a symlink (to 'sub')", "not followed")
    assert not (tree / "sub" / "new.txt").exists()


def test_a_dangling_symlink_is_not_written_through_to_create_its_target(tree: Path) -> None:
    outside_new = tree.parent / "outside" / "created.txt"
    (tree / "dangling.txt").symlink_to(outside_new)
    result = call(FileWrite(tree, requires_approval=False), path="dangling.txt", content="pwned")
    assert refused(result, "'dangling.txt' is a symlink that leads outside the root")
    assert not outside_new.exists()
