"""``read_regular_file``: a file from outside read whole, bounded by what is opened."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from agentensemble._base.regular_file import (
    FolderTooLarge,
    UnreadableFile,
    read_regular_file,
    regular_files,
)

BOUNDS = {"max_entries": 1_000, "max_depth": 8}
posix = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and devices: POSIX")


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"hello")
    assert read_regular_file(tmp_path / "a.txt", max_bytes=5) == b"hello"


@posix
@pytest.mark.parametrize(
    ("make", "follow", "reason"),
    [
        (lambda p: os.mkfifo(p), True, "is not a regular file (it is a FIFO, socket or device)"),
        (lambda p: p.symlink_to("/dev/zero"), True, "is not a regular file"),
        (lambda p: p.mkdir(), True, "is not a regular file (it is a folder)"),
        (lambda p: p.write_bytes(b"x" * 6), True, "is 6 bytes; at most 5 are read"),
        (lambda p: None, True, "does not exist"),
        (lambda p: p.symlink_to(p.with_name("real")), False, "is a symlink; it is not followed"),
    ],
    ids=["fifo", "dev-zero", "folder", "too-large", "missing", "symlink"],
)
def test_what_is_no_bounded_regular_file_is_refused_saying_why(
    tmp_path: Path, make: object, follow: bool, reason: str
) -> None:
    """A FIFO would block the reader for ever and ``/dev/zero`` (size 0 by ``stat``) fill its
    memory: both are refused by the opened descriptor, before a byte is read."""
    (tmp_path / "real").write_bytes(b"x")
    path = tmp_path / "file.txt"
    make(path)  # type: ignore[operator]
    with pytest.raises(UnreadableFile) as caught:
        read_regular_file(path, max_bytes=5, follow_symlinks=follow)
    assert caught.value.reason.startswith(reason)
    assert str(caught.value) == f"{path} {caught.value.reason}"


@posix
def test_a_walk_yields_regular_files_in_order_and_follows_no_symlink(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "z.md").write_text("z")
    (tmp_path / "a.md").write_text("a")
    (tmp_path / "c.md").write_text("c")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "x.md").write_text("x")
    (tmp_path / "link.md").symlink_to(tmp_path / "a.md")
    (tmp_path / "linked").symlink_to(tmp_path / "b")
    os.mkfifo(tmp_path / "pipe.md")
    found = [p.relative_to(tmp_path).as_posix() for p in regular_files(tmp_path, **BOUNDS)]
    assert found == ["a.md", "c.md", "b/z.md"]


@pytest.mark.parametrize(
    ("build", "reason"),
    [
        (lambda p, nest: nest(p, 1_200), "nests folders over 8 deep"),
        (lambda p, nest: [(p / f"f{n}").touch() for n in range(60)], "holds over 50 files"),
    ],
    ids=["deep", "wide"],
)
def test_a_walk_past_its_bounds_is_refused_saying_which(
    tmp_path: Path, nested_folders: Callable[[Path, int], Path], build: object, reason: str
) -> None:
    """os.walk recursed per level (1,200 deep: RecursionError) and read any number of names."""
    build(tmp_path, nested_folders)  # type: ignore[operator]
    with pytest.raises(FolderTooLarge, match=reason):
        list(regular_files(tmp_path, max_entries=50, max_depth=8))
