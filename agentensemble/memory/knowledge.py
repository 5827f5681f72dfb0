"""Knowledge: files and folders chunked into a scope and retrieved for tasks like memory.

``sync`` (run before every run that uses the knowledge) indexes new files, re-indexes a file
whose content changed (size or modification time first, then its SHA-256) and drops the chunks
of files that are gone. Several processes may sync the same knowledge at once: a file's chunks
are replaced in one transaction that writes nothing if they are already current (``_sync.py``).
Without a store of its own, a ``Knowledge`` uses the ensemble's memory store, or else an
in-process SQLite database.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentensemble._base.regular_file import FolderTooLarge, regular_files
from agentensemble.memory._loaders import SUFFIXES, chunks, read_bytes, read_text
from agentensemble.memory._sync import replace_source
from agentensemble.memory.store import MemoryStore, as_store, check_scope, storable

MAX_FILES = 10_000
MAX_ENTRIES = 200_000
"""Files and folders looked at under one knowledge folder (most are not knowledge files)."""
MAX_DEPTH = 64
"""Folders nested deeper than this under a knowledge folder are refused."""
DEFAULT_CHUNK_CHARS = 1_200


@dataclass(frozen=True)
class SyncReport:
    """What one ``sync`` did, file by file."""

    added: list[str]
    updated: list[str]
    removed: list[str]
    unchanged: int


class Knowledge:
    """Files (text, Markdown, HTML, JSON, CSV; PDF with the ``pdf`` extra) as retrievable chunks."""

    def __init__(
        self,
        paths: Sequence[str | os.PathLike[str]],
        scope: str = "knowledge",
        *,
        store: MemoryStore | None = None,
        chunk_chars: int = DEFAULT_CHUNK_CHARS,
    ) -> None:
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        if not paths:
            raise ValueError("Knowledge needs at least one file or folder in paths")
        self.paths = [Path(p).expanduser().absolute() for p in paths]
        for path in self.paths:
            if not path.exists():
                raise ValueError(f"Knowledge path {str(path)!r} does not exist")
        self.scope = check_scope(scope)
        if chunk_chars < 200:
            raise ValueError(f"chunk_chars must be at least 200; got {chunk_chars}")
        self.chunk_chars = chunk_chars
        self.store = as_store(store, "Knowledge(store=...)") if store is not None else None
        self._own: MemoryStore | None = None
        self._lock = threading.Lock()

    def store_for(self, fallback: MemoryStore | None) -> MemoryStore:
        """Where the chunks live: this knowledge's store, the ensemble's, or its own."""
        if self.store is not None:
            return self.store
        if fallback is not None:
            return fallback
        with self._lock:
            if self._own is None:
                from agentensemble.memory.sqlite import SQLiteMemory

                self._own = SQLiteMemory(":memory:")
            return self._own

    def files(self) -> list[Path]:
        """Every readable file under the paths, sorted. In a folder, hidden files and folders
        are skipped, and so is anything but a regular file: a symlink is not followed (a
        ``notes.md`` linked to ``~/.ssh/id_rsa`` or ``/dev/zero``), nor a FIFO or device. A
        folder of over ``MAX_ENTRIES`` names or ``MAX_DEPTH`` levels is refused."""
        found: list[Path] = []
        for path in self.paths:
            if not path.is_dir():  # a path the user named: read as it is (checked when read)
                found.append(path)
                continue
            walked = regular_files(path, max_entries=MAX_ENTRIES, max_depth=MAX_DEPTH)
            try:  # iterative and bounded: a corpus nested 1,500 deep made os.walk recurse out
                for file in walked:
                    if file.suffix.lower() in SUFFIXES:
                        found.append(file)
                    if len(found) > MAX_FILES:
                        raise ValueError(f"Knowledge: more than {MAX_FILES} files under {path}")
            except FolderTooLarge as error:
                raise ValueError(f"Knowledge: {error}") from None
        return sorted(set(found))

    def sync(self, store: MemoryStore | None = None) -> SyncReport:
        """Bring the scope up to date with the files; what changed."""
        target = self.store_for(store)
        indexed: dict[str, list[Any]] = {}
        for entry in target.entries(self.scope):
            source = entry.metadata.get("source")
            if entry.metadata.get("kind") == "knowledge" and isinstance(source, str):
                indexed.setdefault(source, []).append(entry)
        report = SyncReport([], [], [], 0)
        current = self.files()
        for file in current:
            key = source_name(file)
            old = indexed.get(key, [])
            stat = file.stat()
            stamp = f"{stat.st_size}:{stat.st_mtime_ns}"
            if old and old[0].metadata.get("stamp") == stamp:
                report = _count_unchanged(report)
                continue
            # read once, bounded, never through a link swapped in since it was listed
            data = read_bytes(file, follow_symlinks=file in self.paths)
            digest = hashlib.sha256(data).hexdigest()
            if old and old[0].metadata.get("sha256") == digest:
                report = _count_unchanged(report)
                continue
            text = read_text(file, data)
            meta = {"kind": "knowledge", "source": key, "sha256": digest, "stamp": stamp}
            pieces = [
                (c, {**meta, "chunk": n}) for n, c in enumerate(chunks(text, self.chunk_chars))
            ]
            if not replace_source(target, self.scope, key, digest, pieces, old):
                report = _count_unchanged(report)  # another process indexed it meanwhile
                continue
            (report.updated if old else report.added).append(key)
        present = {source_name(f) for f in current}
        for source, entries in indexed.items():
            if source not in present and self._covers(source):
                for entry in entries:
                    target.delete(entry.id)
                report.removed.append(source)
        return report

    def _covers(self, source: str) -> bool:
        """Whether the file a stored ``source`` names is one of these paths or under one."""
        for path in self.paths:
            name = source_name(path)
            if source == name or source.startswith(name.rstrip(os.sep) + os.sep):
                return True
        return False

    def __repr__(self) -> str:
        return f"Knowledge(paths={[str(p) for p in self.paths]!r}, scope={self.scope!r})"


def source_name(path: Path) -> str:
    """A file's path as its chunks' ``source``: text every store keeps, one per file. A name
    that is not UTF-8 (``notes\\xff.md``, read as a lone surrogate) is shown with that byte
    escaped: stored as it was, the write failed and the sync with it."""
    try:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate that is no undecodable byte
        return storable(str(path))


def _count_unchanged(report: SyncReport) -> SyncReport:
    return SyncReport(report.added, report.updated, report.removed, report.unchanged + 1)


__all__ = ["Knowledge", "SyncReport"]
