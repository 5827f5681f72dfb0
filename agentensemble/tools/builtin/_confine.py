"""Paths a model names, opened beneath a root directory without ever following a symlink.

A model's path is relative to the root. Refused before anything is opened: empty paths, NUL
bytes, absolute paths (also ``~`` and Windows drives) and any ``..`` component. The path is then
opened one component at a time from a descriptor of the root: each directory with
``O_DIRECTORY | O_NOFOLLOW`` relative to its parent's descriptor, the last component with
``O_NOFOLLOW``. A symlink anywhere below the root is refused, whether it was there all along or
swapped in (by another process, or by the model through another tool) while the call runs: there
is no moment between a check and an open for a swap to land in. Linux only (it relies on
``dir_fd`` and ``O_NOFOLLOW``); the root itself is the user's and is trusted.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import NoReturn

from agentensemble.errors import ConfigurationError
from agentensemble.tools.builtin._base import refuse

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # absent on Windows: the tools refuse to be made there
_DIRECTORY_FLAGS = (
    os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
)
_FILE_FLAGS = _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_SUPPORTED = bool(_NOFOLLOW and getattr(os, "O_DIRECTORY", 0)) and os.open in os.supports_dir_fd


def root_directory(root: str | os.PathLike[str], tool: str) -> Path:
    """The resolved root, which must be an existing directory (checked at construction)."""
    if not _SUPPORTED:
        raise ConfigurationError(
            f"{tool} needs O_NOFOLLOW, O_DIRECTORY and dir_fd (Linux) to stay inside its root"
        )
    resolved = Path(root).expanduser().resolve()
    if not resolved.is_dir():
        raise ConfigurationError(f"{tool}: root {str(root)!r} is not an existing directory")
    return resolved


def relative_parts(path: str) -> tuple[str, ...]:
    """The components of a model's path (``.`` dropped), or a refusal saying why it is refused."""
    if not path or not path.strip():
        refuse("path is empty; give a path relative to the root, e.g. 'notes/todo.txt'")
    if "\x00" in path:
        refuse("path contains a NUL byte")
    if path.startswith(("/", "\\", "~")) or PureWindowsPath(path).drive:
        refuse(f"path {path!r} is absolute; give a path relative to the root")
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if ".." in parts:
        refuse(f"path {path!r} contains '..'; paths must stay inside the root")
    return tuple(part for part in parts if part != ".")


def shown(parts: Sequence[str]) -> str:
    """Components as the model should see them: relative to the root, ``.`` for the root."""
    return "/".join(parts) or "."


def open_directory(root: Path, parts: Sequence[str], *, create: bool = False) -> int:
    """A descriptor of ``root/parts``, walked one directory at a time, never through a symlink.

    With ``create``, missing directories are made on the way (each is then opened with
    ``O_NOFOLLOW`` like any other, so a symlink planted in its place is still refused).
    The caller closes the descriptor.
    """
    try:
        fd = os.open(root, _DIRECTORY_FLAGS)
    except OSError as error:
        refuse(f"the root folder cannot be opened: {error.strerror or error}")
    try:
        for index, part in enumerate(parts):
            if create:
                try:
                    os.mkdir(part, dir_fd=fd)
                except FileExistsError:
                    pass
                except OSError as error:
                    _refuse_opening(root, fd, parts[: index + 1], error, want_directory=True)
            try:
                child = os.open(part, _DIRECTORY_FLAGS, dir_fd=fd)
            except OSError as error:
                _refuse_opening(root, fd, parts[: index + 1], error, want_directory=True)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(root: Path, parts: Sequence[str], flags: int, *, create_directories: bool) -> int:
    """A descriptor of the file ``root/parts`` opened with ``flags``, never through a symlink.

    What it names may be any kind of file (the caller checks it is a regular one). Its folders
    are created first with ``create_directories``; otherwise a missing one is refused by name.
    The caller closes the descriptor.
    """
    *folders, name = parts
    parent = open_directory(root, folders, create=create_directories)
    try:
        return os.open(name, flags | _FILE_FLAGS, 0o666, dir_fd=parent)
    except OSError as error:
        _refuse_opening(root, parent, parts, error, want_directory=False)
    finally:
        os.close(parent)


def _kind(directory: int, name: str) -> int | None:
    """The file type bits of ``name`` in ``directory`` (a symlink is not followed), or None."""
    try:
        return stat.S_IFMT(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
    except OSError:
        return None


def _refuse_opening(
    root: Path, parent: int, parts: Sequence[str], error: OSError, *, want_directory: bool
) -> NoReturn:
    """Why ``parts`` (the last of which failed to open in ``parent``) cannot be used."""
    label = shown(parts)
    kind = _kind(parent, parts[-1])
    if kind == stat.S_IFLNK:
        _refuse_symlink(root, parent, parts)
    if kind is None and error.errno == errno.ENOENT:
        refuse(f"no such {'directory' if want_directory else 'file'}: {label!r}")
    if kind is None:
        refuse(f"cannot open {label!r}: {error.strerror or error}")
    if error.errno == errno.ENOTDIR or (want_directory and kind != stat.S_IFDIR):
        refuse(f"{label!r} is not a directory")
    if error.errno == errno.EISDIR:
        refuse(f"{label!r} is a directory")
    if kind not in (stat.S_IFREG, stat.S_IFDIR):  # a FIFO without a reader, a socket
        refuse(f"{label!r} is not a regular file")
    refuse(f"cannot open {label!r}: {error.strerror or error}")


def _refuse_symlink(root: Path, parent: int, parts: Sequence[str]) -> NoReturn:
    """A symlink is never followed; the message says where it points if that is inside."""
    label = shown(parts)
    try:
        target = os.readlink(parts[-1], dir_fd=parent)
    except OSError:
        target = ""
    lands = os.path.normpath(os.path.join(root, *parts[:-1], target)) if target else ""
    if lands == str(root) or lands.startswith(str(root) + os.sep):
        inside = shown(PurePosixPath(os.path.relpath(lands, root)).parts)
        refuse(
            f"{label!r} is a symlink (to {inside!r}); symlinks are not followed, "
            "give the path it points to"
        )
    refuse(f"{label!r} is a symlink that leads outside the root; symlinks are not followed")


__all__ = ["open_directory", "open_file", "relative_parts", "root_directory", "shown"]
