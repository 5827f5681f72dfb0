"""Paths a model names, confined to a root directory.

A model's path is relative to the root. Refused: empty paths, NUL bytes, absolute paths (also
``~`` and Windows drives), any ``..`` component, and anything whose fully resolved path (every
symlink followed) lands outside the resolved root.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath

from agentensemble.errors import ConfigurationError
from agentensemble.tools.builtin._base import refuse


def root_directory(root: str | os.PathLike[str], tool: str) -> Path:
    """The resolved root, which must be an existing directory (checked at construction)."""
    resolved = Path(root).expanduser().resolve()
    if not resolved.is_dir():
        raise ConfigurationError(f"{tool}: root {str(root)!r} is not an existing directory")
    return resolved


def confined(root: Path, path: str) -> Path:
    """``root / path`` resolved, or a refusal saying why the path is not allowed."""
    if not path or not path.strip():
        refuse("path is empty; give a path relative to the root, e.g. 'notes/todo.txt'")
    if "\x00" in path:
        refuse("path contains a NUL byte")
    if path.startswith(("/", "\\", "~")) or PureWindowsPath(path).drive:
        refuse(f"path {path!r} is absolute; give a path relative to the root")
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if ".." in parts:
        refuse(f"path {path!r} contains '..'; paths must stay inside the root")
    try:
        resolved = (root / path).resolve()
    except (OSError, RuntimeError) as error:  # a symlink loop
        refuse(f"path {path!r} cannot be resolved: {error}")
    if resolved != root and root not in resolved.parents:
        refuse(f"path {path!r} leads outside the root (through a symlink)")
    return resolved


def shown(root: Path, resolved: Path) -> str:
    """A resolved path as the model should see it: relative to the root."""
    relative = resolved.relative_to(root).as_posix()
    return relative or "."


__all__ = ["confined", "root_directory", "shown"]
