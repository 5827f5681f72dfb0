"""Files from outside, read whole and found in a folder: bounded by what is there, not by what
a name said a moment before.

``path.stat()`` then ``path.read_bytes()`` reads whatever is there when it is opened: a FIFO
named ``notes.txt`` blocks the reader for ever, a symlink to ``/dev/zero`` (size 0 by ``stat``)
is read until memory runs out, and a file that grows between the two is read whole. Files from
outside (knowledge folders, dataset and crew files, attachments) are read here instead: opened
without blocking, checked to be a regular file by the descriptor itself, and read to at most
``max_bytes``. ``follow_symlinks=False`` refuses a symlink as the last part of the path.

``regular_files`` walks a folder from outside (a knowledge corpus, a skill) without recursion and
within bounds: ``os.walk`` recurses per level (a folder nested 1,500 deep raised
``RecursionError``) and reads any number of entries (a million empty folders took as long as
they took). Symlinks are not followed and hidden names are skipped.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
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


class FolderTooLarge(ValueError):
    """A folder from outside holds more entries, or nests deeper, than the walk's bound."""


def regular_files(root: Path, *, max_entries: int, max_depth: int) -> Iterator[Path]:
    """The regular files under ``root``, a folder's own files before its subfolders', names
    sorted; hidden names skipped, symlinks (to files or folders) not followed. Raises
    ``FolderTooLarge`` past ``max_entries`` names seen or ``max_depth`` folders deep."""
    stack: list[tuple[Path, int]] = [(root, 0)]
    seen = 0
    while stack:
        folder, depth = stack.pop()
        entries: list[os.DirEntry[str]] = []
        try:
            with os.scandir(folder) as listing:
                for entry in listing:
                    seen += 1
                    if seen > max_entries:
                        raise FolderTooLarge(
                            f"{root} holds over {max_entries} files and folders; "
                            "at most that many are looked at"
                        )
                    if not entry.name.startswith("."):
                        entries.append(entry)
        except OSError:  # unreadable or gone since it was listed: nothing to read there
            continue
        folders: list[Path] = []
        for entry in sorted(entries, key=lambda item: item.name):
            if entry.is_dir(follow_symlinks=False):
                folders.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                yield Path(entry.path)
        if folders and depth >= max_depth:
            raise FolderTooLarge(
                f"{root} nests folders over {max_depth} deep (at {folders[0]}); "
                "at most that deep is looked at"
            )
        stack.extend((child, depth + 1) for child in reversed(folders))


__all__ = [
    "FolderTooLarge",
    "UnreadableFile",
    "is_regular_file",
    "read_regular_file",
    "regular_files",
]
