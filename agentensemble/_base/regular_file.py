"""One file read whole, bounded by what is opened, not by what its name said a moment before.

``path.stat()`` then ``path.read_bytes()`` reads whatever is there when it is opened: a FIFO
named ``notes.txt`` blocks the reader for ever, a symlink to ``/dev/zero`` (size 0 by ``stat``)
is read until memory runs out, and a file that grows between the two is read whole. Files from
outside (knowledge folders, dataset and crew files, attachments) are read here instead: opened
without blocking, checked to be a regular file by the descriptor itself, and read to at most
``max_bytes``. ``follow_symlinks=False`` refuses a symlink as the last part of the path.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class UnreadableFile(ValueError):
    """A file could not be read as a bounded regular file; ``reason`` says why, in a phrase
    that follows the file's name ("is a symlink", "is 30000000 bytes; at most 20971520");
    ``too_large`` when the file is a regular one over the bound."""

    def __init__(self, path: str, reason: str, *, too_large: bool = False) -> None:
        super().__init__(f"{path} {reason}")
        self.path = path
        self.reason = reason
        self.too_large = too_large


def read_regular_file(
    path: str | os.PathLike[str], *, max_bytes: int, follow_symlinks: bool = True
) -> bytes:
    """The bytes of the regular file at ``path``, at most ``max_bytes`` of them, or
    ``UnreadableFile``. Never blocks on a FIFO or device and never reads past the bound."""
    name = str(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise UnreadableFile(name, "does not exist") from None
    except OSError as error:
        if not follow_symlinks and os.path.islink(path):
            raise UnreadableFile(name, "is a symlink; it is not followed") from None
        raise UnreadableFile(name, f"cannot be read: {error.strerror or error}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO, socket or device"
        raise UnreadableFile(name, f"is not a regular file (it is {kind})")
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > max_bytes:
            raise UnreadableFile(
                name, f"is {info.st_size} bytes; at most {max_bytes} are read", too_large=True
            )
        try:
            data = handle.read(max_bytes + 1)
        except OSError as error:
            raise UnreadableFile(name, f"cannot be read: {error.strerror or error}") from None
    if len(data) > max_bytes:  # it grew after it was opened
        raise UnreadableFile(
            name, f"is over {max_bytes} bytes; at most {max_bytes} are read", too_large=True
        )
    return data


def is_regular_file(path: Path) -> bool:
    """Whether ``path`` itself (a symlink is not followed) is a regular file."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


__all__ = ["UnreadableFile", "is_regular_file", "read_regular_file"]
