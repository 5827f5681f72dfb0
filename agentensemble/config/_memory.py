"""The ``memory:`` and ``knowledge:`` sections of a crew file (docs/yaml.md, docs/memory.md).

```yaml
memory: memory.sqlite                         # a SQLite file beside the crew file
memory: {sqlite: data/memory.sqlite, embedder: hashing}
memory: {url_env: MEMORY_DATABASE_URL}        # Postgres; the URL (and its password) stays
                                              # in the environment, never in the file
knowledge: [handbook.md, {paths: [faq/], scope: faq}]
tasks:
  answer: {description: ..., memory: [customer-42], knowledge: [policies/]}
```

Relative paths are the crew file's folder's, as ``root:`` and ``cwd:`` are. The store is built
(and a Postgres server reached) while the file is read, so a bad store is an error at its line,
before any model call. ``agentensemble.memory`` is imported only when a file has these keys.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from agentensemble.config._crew_imports import current_crew_folder
from agentensemble.config._positions import Located, Path
from agentensemble.config._values import as_list, entries, imported, kind_of, known_keys

MEMORY_SECTIONS = ("memory", "knowledge")
MEMORY_KEYS = ("sqlite", "url_env", "url", "embedder")
KNOWLEDGE_KEYS = ("paths", "scope", "chunk_chars")
SCOPE_KEYS = ("scope", "write", "query")
_POSTGRES = ("postgresql://", "postgres://")
_PASSWORD_IN_URL = re.compile(r"://[^/@:]*:[^/@]+@")
_EXAMPLE = "memory: memory.sqlite, or memory: {url_env: MEMORY_DATABASE_URL} for Postgres"


def crew_path(value: str) -> str:
    """``value`` (``~`` expanded) against the crew file's folder when relative."""
    expanded = os.path.expanduser(value)
    folder = current_crew_folder()
    if folder is None or os.path.isabs(expanded):
        return expanded
    return os.path.join(folder, expanded)


def memory_settings(doc: Located, data: Mapping[str, Any]) -> dict[str, Any]:
    """The Ensemble's ``memory`` and ``knowledge`` from a crew file's top level."""
    check_task_memory(doc, data)
    settings: dict[str, Any] = {}
    if data.get("memory") is not None:
        settings["memory"] = memory_store(doc, ("memory",), data["memory"])
    if data.get("knowledge") is not None:
        settings["knowledge"] = knowledge_list(doc, ("knowledge",), data["knowledge"])
    return settings


def check_task_memory(doc: Located, data: Mapping[str, Any]) -> None:
    """A task's ``memory:`` scopes need the top-level ``memory:`` store: said at the task."""
    if data.get("memory") is not None or not isinstance(data.get("tasks"), Mapping | list):
        return
    for _, where, spec in entries(doc, ("tasks",), data["tasks"]):
        if spec.get("memory"):
            raise doc.error(
                (*where, "memory"),
                "this task keeps memory, but the crew file has no store: add `memory: "
                "memory.sqlite` (a SQLite file beside the crew file) or `memory: {url_env: "
                "MEMORY_DATABASE_URL}` (Postgres) at the top level",
            )


def memory_store(doc: Located, path: Path, value: Any) -> Any:
    """The store a crew file's ``memory:`` names, built now (its errors at ``path``)."""
    short = isinstance(value, str)
    if isinstance(value, str):
        value = {"url": value} if value.startswith(_POSTGRES) else {"sqlite": value}
    elif isinstance(value, Mapping):
        known_keys(doc, path, value, MEMORY_KEYS, "memory")
    else:
        raise doc.error(
            path, f"expected a SQLite file or a mapping ({_EXAMPLE}); got {kind_of(value)}"
        )
    kinds = [key for key in ("sqlite", "url_env", "url") if value.get(key) is not None]
    if len(kinds) != 1:
        found = " and ".join(kinds) if kinds else "none of sqlite, url_env, url"
        raise doc.error(path, f"memory names one store: sqlite:, url_env: or url: (found {found})")
    kind = kinds[0]
    key_path: Path = path if short else (*path, kind)
    location = value[kind]
    if not isinstance(location, str) or not location.strip():
        raise doc.error(key_path, f"{kind}: needs a non-blank text; got {location!r}")
    embedder = _embedder(doc, (*path, "embedder"), value.get("embedder"))
    if kind == "url_env":
        url = os.environ.get(location)
        if url is None or not url.strip():
            raise doc.error(key_path, f"url_env names {location!r}, which is not set")
        if not url.startswith(_POSTGRES):
            raise doc.error(key_path, f"{location} must hold a postgresql:// URL")
        return _built(doc, key_path, "postgres", url, embedder)
    if kind == "url":
        if not location.startswith(_POSTGRES):
            raise doc.error(key_path, "url: takes a postgresql:// URL; a file is sqlite: PATH")
        if _PASSWORD_IN_URL.search(location):
            raise doc.error(
                key_path,
                "this URL holds a password, which a crew file must not: put the URL in an "
                "environment variable and write url_env: ITS_NAME",
            )
        return _built(doc, key_path, "postgres", location, embedder)
    return _built(doc, key_path, "sqlite", crew_path(location), embedder)


def _built(doc: Located, path: Path, kind: str, where: str, embedder: Any) -> Any:
    try:
        if kind == "postgres":
            from agentensemble.memory.postgres import PostgresMemory

            return PostgresMemory(where, embedder=embedder)
        from agentensemble.memory.sqlite import SQLiteMemory

        return SQLiteMemory(where, embedder=embedder)
    except (OSError, ValueError, ImportError) as error:  # ConnectionError is an OSError
        message = str(error)
        shown = message if message.startswith("memory store") else f"memory store {message}"
        raise doc.error(path, shown) from None


def _embedder(doc: Located, path: Path, value: Any) -> Any:
    """``local`` (LocalEmbedder), ``hashing`` (HashingEmbedder), ``lexical`` (none), or an import
    path to an embedder (a class is called); absent: the store's default (``auto``)."""
    if value is None:
        return "auto"
    if value == "lexical":
        return None
    if value in ("hashing", "local"):
        from agentensemble.memory.embedders import HashingEmbedder, LocalEmbedder

        try:
            return HashingEmbedder() if value == "hashing" else LocalEmbedder()
        except ImportError as error:
            raise doc.error(path, str(error)) from None
    if not isinstance(value, str) or ":" not in value:
        raise doc.error(
            path,
            "embedder: is local, hashing, lexical or an import path package.module:name; "
            f"got {value!r}",
        )
    found = imported(doc, path, value)
    made = found() if isinstance(found, type) else found
    if not callable(getattr(made, "embed", None)):
        raise doc.error(path, f"{value} is not an embedder (it has no embed(texts) method)")
    return made


def task_scopes(doc: Located, path: Path, value: Any) -> list[Any]:
    """A task's ``memory:``: scope names, and ``{scope, write, query}`` mappings
    (``write: false`` for a read-only scope; ``query`` a template)."""
    from agentensemble.task_memory import MemoryScope

    scopes: list[Any] = []
    for index, item in enumerate(as_list(doc, path, value)):
        where: Path = (*path, index)
        if not isinstance(item, Mapping):
            scopes.append(item)  # a name: Task checks it
            continue
        known_keys(doc, where, item, SCOPE_KEYS, "memory scope")
        if not isinstance(item.get("write", True), bool):
            raise doc.error((*where, "write"), "write takes true or false (false: read-only)")
        name: Any = item.get("scope")  # MemoryScope says what is wrong with it
        try:
            scopes.append(MemoryScope(name, item.get("write", True), item.get("query")))
        except ValueError as error:
            raise doc.error(where, str(error)) from None
    return scopes


def knowledge_list(doc: Located, path: Path, value: Any) -> list[Any]:
    """``knowledge:``: paths (files or folders) and ``{paths, scope, chunk_chars}`` mappings."""
    from agentensemble.memory.knowledge import Knowledge

    made: list[Any] = []
    loose: list[str] = []
    loose_at: Path = path
    for index, item in enumerate(as_list(doc, path, value)):
        where: Path = (*path, index)
        if isinstance(item, str) and item.strip():
            loose_at = loose_at if loose else where
            loose.append(_existing(doc, where, item))
            continue
        if not isinstance(item, Mapping):
            raise doc.error(
                where, "knowledge takes file or folder paths, or {paths: [...], scope: name}"
            )
        known_keys(doc, where, item, KNOWLEDGE_KEYS, "knowledge")
        paths = [
            _existing(doc, (*where, "paths", i), p)
            for i, p in enumerate(as_list(doc, (*where, "paths"), item.get("paths") or []))
        ]
        if not paths:
            raise doc.error(where, "knowledge needs paths: [a file or folder, ...]")
        settings = {k: item[k] for k in ("scope", "chunk_chars") if item.get(k) is not None}
        try:
            made.append(Knowledge(paths, **settings))
        except (ValueError, TypeError) as error:
            raise doc.error(where, str(error)) from None
    if loose:
        try:
            made.insert(0, Knowledge(loose))
        except ValueError as error:
            raise doc.error(loose_at, str(error)) from None
    return made


def _existing(doc: Located, path: Path, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise doc.error(path, f"expected a file or folder path; got {value!r}")
    resolved = crew_path(value)
    if not os.path.exists(resolved):
        raise doc.error(path, f"{value!r} does not exist (looked for {resolved})")
    return resolved


__all__ = [
    "MEMORY_SECTIONS",
    "check_task_memory",
    "crew_path",
    "knowledge_list",
    "memory_settings",
    "memory_store",
]
