"""``read_regular_file``: a file from outside read whole, bounded by what is opened."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentensemble._base.regular_file import UnreadableFile, read_regular_file

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
