"""FileRead, FileWrite and ListDirectory: file access confined to one root directory.

Paths are relative to the root; ``..``, absolute paths and symlinks that lead out are refused
(see ``_confine``). Reads and writes are capped in size, binary files are refused with a
message, and only regular files are opened (a FIFO would block forever). FileWrite asks the
reviewer first by default.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from agentensemble.tools.builtin._base import BuiltinTool, refuse
from agentensemble.tools.builtin._confine import confined, root_directory, shown

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


def _open_regular(path: Path, flags: int, shown_as: str) -> int:
    """Open without following a last-moment symlink, and only a regular file."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        refuse(f"no such file: {shown_as!r}")
    except IsADirectoryError:
        refuse(f"{shown_as!r} is a directory")
    except OSError as error:
        refuse(f"cannot open {shown_as!r}: {error.strerror or error}")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        refuse(f"{shown_as!r} is not a regular file")
    return fd


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
        target = confined(self.root, input.path)
        label = shown(self.root, target)
        if target.is_dir():
            refuse(f"{label!r} is a directory; use a directory listing tool")
        fd = _open_regular(target, os.O_RDONLY, label)
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
        target = confined(self.root, input.path)
        label = shown(self.root, target)
        if target == self.root or target.is_dir():
            refuse(f"{label!r} is a directory")
        if not target.parent.is_dir():
            if not self.create_directories:
                refuse(f"directory {shown(self.root, target.parent)!r} does not exist")
            target.parent.mkdir(parents=True, exist_ok=True)
            target = confined(self.root, input.path)  # re-checked after creating directories
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if input.append else os.O_TRUNC)
        fd = _open_regular(target, flags, label)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        verb = "Appended" if input.append else "Wrote"
        return f"{verb} {len(data)} bytes to {label}"


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
        target = confined(self.root, input.path or ".")
        label = shown(self.root, target)
        if not target.is_dir():
            refuse(
                f"{label!r} is not a directory"
                if target.exists()
                else f"no such directory: {label!r}"
            )
        lines: list[str] = []
        with os.scandir(target) as entries:
            ordered = sorted(entries, key=lambda entry: entry.name)
        for entry in ordered[: self.max_entries]:
            if entry.is_symlink():
                lines.append(f"{entry.name}@")
            elif entry.is_dir(follow_symlinks=False):
                lines.append(f"{entry.name}/")
            else:
                lines.append(f"{entry.name} ({entry.stat(follow_symlinks=False).st_size} bytes)")
        if len(ordered) > self.max_entries:
            lines.append(f"[{len(ordered) - self.max_entries} more entries not shown]")
        return "\n".join(lines) if lines else f"{label} is empty"


__all__ = ["FileRead", "FileWrite", "ListDirectory"]
