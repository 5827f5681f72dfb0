"""FileRead, FileWrite and ListDirectory: file access confined to one root directory.

Paths are relative to the root; ``..`` and absolute paths are refused, and every path is opened
one component at a time from the root without following any symlink, so a folder swapped for a
symlink mid-call cannot lead out (see ``_confine``; Linux only). Reads and writes are capped in
size, binary files are refused with a message, and only regular files are read or written (a
FIFO would block forever). FileWrite asks the reviewer first by default.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from agentensemble.tools.builtin._base import BuiltinTool, refuse
from agentensemble.tools.builtin._confine import (
    open_directory,
    open_file,
    relative_parts,
    root_directory,
    shown,
)

DEFAULT_MAX_BYTES = 1_000_000
DEFAULT_MAX_ENTRIES = 500
_BINARY_SNIFF_BYTES = 8_192


class FileReadInput(BaseModel):
    path: Annotated[str, Field(description="File path relative to the root, e.g. 'docs/a.md'")]


class FileWriteInput(BaseModel):
    path: Annotated[str, Field(description="File path relative to the root, e.g. 'out/a.txt'")]
    content: Annotated[str, Field(description="The text to write (UTF-8)")]
    append: Annotated[bool, Field(description="Append instead of replacing the file")] = False


class ListDirectoryInput(BaseModel):
    path: Annotated[str, Field(description="Directory relative to the root; '.' is the root")] = "."


def _regular(fd: int, label: str, directory_hint: str = "") -> int:
    """``fd`` if it is a regular file; otherwise it is closed and the call refused."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode):
        return fd
    os.close(fd)
    if stat.S_ISDIR(mode):
        refuse(f"{label!r} is a directory{directory_hint}")
    refuse(f"{label!r} is not a regular file")


MAX_LINK_SCAN = 20_000
"""Entries of the root looked at, at most, to find a hard-linked file's other names."""


def _not_linked_outside(fd: int, root: Path, label: str) -> None:
    """Refuse (closing ``fd``) a file with hard links unless all of them lie inside the root.

    A hard link has no target to check as a symlink has: the same file simply has another name,
    maybe outside the root (``~/.bashrc`` linked in as ``notes.txt``), and writing one name
    writes them all. A file with more names than can be found under the root is refused.
    """
    info = os.fstat(fd)
    if info.st_nlink <= 1:
        return
    found, seen = 0, 0
    for folder, directories, files in os.walk(root):  # symlinks are not followed
        for name in (*directories, *files):
            seen += 1
            if seen > MAX_LINK_SCAN:
                break
            try:
                other = os.stat(os.path.join(folder, name), follow_symlinks=False)
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino):
                found += 1
        if seen > MAX_LINK_SCAN:
            break
    if found < info.st_nlink:
        os.close(fd)
        refuse(
            f"{label!r} is a hard link to a file with {info.st_nlink} names, not all of them "
            "inside the working folder: writing it could change a file outside; refused"
        )


def _is_binary(data: bytes) -> bool:
    if b"\x00" in data[:_BINARY_SNIFF_BYTES]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        return error.start < len(data) - 4  # a character cut at the cap is fine
    return False


class FileRead(BuiltinTool[FileReadInput]):
    """Read a UTF-8 text file under the root (size capped; binary files refused)."""

    default_name = "file_read"

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        name: str | None = None,
    ) -> None:
        self._init_name(name)
        self.root = root_directory(root, "FileRead")
        self.max_bytes = max_bytes
        self.description = (
            "Read a text file. path is relative to the working folder (no '..', no absolute "
            f"paths); files over {max_bytes} bytes and binary files are refused."
        )

    def do_execute(self, input: FileReadInput) -> str:
        parts = relative_parts(input.path)
        label, hint = shown(parts), "; use a directory listing tool"
        if not parts:
            refuse(f"{label!r} is a directory{hint}")
        fd = open_file(self.root, parts, os.O_RDONLY, create_directories=False)
        _regular(fd, label, hint)
        with os.fdopen(fd, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > self.max_bytes:
                refuse(f"{label!r} is {size} bytes; this tool reads at most {self.max_bytes}")
            data = handle.read(self.max_bytes + 1)
        if len(data) > self.max_bytes:
            refuse(f"{label!r} is over {self.max_bytes} bytes; this tool reads no more")
        if _is_binary(data):
            refuse(f"{label!r} is a binary file; only UTF-8 text files can be read")
        return data.decode("utf-8", errors="replace")


class FileWrite(BuiltinTool[FileWriteInput]):
    """Write (or append) a UTF-8 text file under the root; asks the reviewer by default."""

    default_name = "file_write"

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        requires_approval: bool = True,
        max_bytes: int = DEFAULT_MAX_BYTES,
        create_directories: bool = True,
        name: str | None = None,
    ) -> None:
        self._init_name(name)
        self.root = root_directory(root, "FileWrite")
        self.requires_approval = requires_approval
        self.max_bytes = max_bytes
        self.create_directories = create_directories
        self.description = (
            "Write text to a file (replacing it, or appending with append=true). path is "
            f"relative to the working folder; at most {max_bytes} bytes."
        )

    def do_execute(self, input: FileWriteInput) -> str:
        data = input.content.encode("utf-8")
        if len(data) > self.max_bytes:
            refuse(f"content is {len(data)} bytes; this tool writes at most {self.max_bytes}")
        parts = relative_parts(input.path)
        label = shown(parts)
        if not parts:
            refuse(f"{label!r} is a directory")
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if input.append else 0)
        fd = open_file(self.root, parts, flags, create_directories=self.create_directories)
        _regular(fd, label)
        _not_linked_outside(fd, self.root, label)
        if not input.append:
            os.ftruncate(fd, 0)  # only now that it is known to be a regular file
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        verb = "Appended" if input.append else "Wrote"
        return f"{verb} {len(data)} bytes to {label}"


def _entry_line(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return f"{entry.name}@"
    if entry.is_dir(follow_symlinks=False):
        return f"{entry.name}/"
    return f"{entry.name} ({entry.stat(follow_symlinks=False).st_size} bytes)"


class ListDirectory(BuiltinTool[ListDirectoryInput]):
    """List a directory under the root: folders end with '/', files show their size."""

    default_name = "list_directory"

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        name: str | None = None,
    ) -> None:
        self._init_name(name)
        self.root = root_directory(root, "ListDirectory")
        self.max_entries = max_entries
        self.description = (
            "List a folder: sub-folders end with '/', files show their size, symlinks end "
            "with '@'. path is relative to the working folder; '.' is the folder itself."
        )

    def do_execute(self, input: ListDirectoryInput) -> str:
        parts = relative_parts(input.path or ".")
        label = shown(parts)
        fd = open_directory(self.root, parts)
        try:  # entries are looked at through the open descriptor: it must stay open meanwhile
            with os.scandir(fd) as entries:
                ordered = sorted(entries, key=lambda entry: entry.name)
            lines = [_entry_line(entry) for entry in ordered[: self.max_entries]]
        finally:
            os.close(fd)
        if len(ordered) > self.max_entries:
            lines.append(f"[{len(ordered) - self.max_entries} more entries not shown]")
        return "\n".join(lines) if lines else f"{label} is empty"


__all__ = ["FileRead", "FileWrite", "ListDirectory"]
