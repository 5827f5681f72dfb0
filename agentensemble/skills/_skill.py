"""``Skill.from_folder``: a SKILL.md folder read and checked once, before any model call.

A skill may come from the internet, so its folder is read like untrusted input: SKILL.md is
opened without following a symlink and bounded in size, its front matter is parsed by
``agentensemble.untrusted.parse_yaml`` (bounded values, depth and tags), and every rule of the
Agent Skills format is checked with an error naming the file and the line. Characters that hide
text from a reader (zero-width, bidi, Unicode tag characters) are dropped from what a model
will see, so a skill cannot carry instructions its reviewer never saw.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

from agentensemble._base.dataclass import dataclass
from agentensemble.errors import ConfigurationError
from agentensemble.redaction import drop_hidden, redact_text

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 100_000
"""SKILL.md larger than this is refused (the format advises under 5,000 tokens, ~20 kB)."""
MAX_FRONT_MATTER_CHARS = 16_000
"""The front matter's bound: name, description, license, compatibility, metadata."""
MAX_FRONT_MATTER_VALUES = 500
"""Values the front matter may build (an alias counts each time it is used)."""
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500

_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_FENCE = "---"


class SkillError(ConfigurationError):
    """A skill folder is unusable: the message starts with ``path/SKILL.md:line:``."""

    def __init__(self, file: str, line: int | None, message: str) -> None:
        super().__init__(f"{file}:{line}: {message}" if line is not None else f"{file}: {message}")
        self.file = file
        self.line = line


@dataclass(frozen=True)
class Skill:
    """A SKILL.md folder: what the prompt shows (``name``, ``description``) and what the agent
    loads when it needs it (``body``, and the folder's files through ``read_skill_file``)."""

    name: str
    description: str
    folder: Path
    body: str = ""
    license: str | None = None
    compatibility: str | None = None
    allowed_tools: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict, hash=False)

    @classmethod
    def from_folder(cls, path: str | os.PathLike[str]) -> Skill:
        """Read ``path/SKILL.md``; raise ``SkillError`` (file and line) for any broken rule."""
        folder = Path(path).expanduser()
        file = str(folder / SKILL_FILE)
        if not folder.is_dir():
            raise SkillError(str(folder), None, "not a folder; a skill is a folder with SKILL.md")
        folder = folder.resolve()
        text = _read_skill_file(folder, file)
        front, body, first = _split(text, file)
        return _skill(folder, front, body, first, file)

    def __repr__(self) -> str:
        return f"Skill(name={self.name!r}, folder={str(self.folder)!r})"

    __str__ = __repr__


def as_skill(value: Any) -> Skill:
    """A ``Skill``, or a folder path (text or ``os.PathLike``) read with ``from_folder``."""
    if isinstance(value, Skill):
        return value
    if isinstance(value, str | os.PathLike):
        return Skill.from_folder(value)
    raise ValueError(
        f"skills takes Skill objects or folder paths, got {type(value).__name__}; "
        "e.g. skills=['skills/pdf-forms'] or skills=[Skill.from_folder('skills/pdf-forms')]"
    )


def listing(skills: Sequence[Skill]) -> tuple[tuple[str, str], ...]:
    """(name, description) of each skill, as the prompt lists them: redacted on the way out."""
    return tuple((skill.name, redact_text(skill.description)) for skill in skills)


def _read_skill_file(folder: Path, file: str) -> str:
    """SKILL.md's text: a regular file (never a symlink), at most ``MAX_SKILL_BYTES``, UTF-8."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(folder / SKILL_FILE, flags)
    except FileNotFoundError:
        raise SkillError(file, None, "missing; a skill folder must hold a SKILL.md") from None
    except OSError as error:
        if os.path.islink(folder / SKILL_FILE):
            raise SkillError(file, None, "is a symlink; SKILL.md must be a file") from None
        raise SkillError(file, None, f"cannot be read: {error.strerror or error}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SkillError(file, None, "is not a regular file")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_SKILL_BYTES + 1)
    if len(data) > MAX_SKILL_BYTES:
        raise SkillError(
            file, None, f"is over {MAX_SKILL_BYTES} bytes; move detail to references/ files"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SkillError(file, None, f"is not UTF-8 text (at byte {error.start})") from None
    return text.removeprefix("\ufeff").replace("\r\n", "\n")


def _split(text: str, file: str) -> tuple[str, str, int]:
    """(front matter, body, the front matter's first line number) of SKILL.md's text."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != _FENCE:
        raise SkillError(
            file,
            1,
            "must start with YAML front matter between '---' lines, e.g. "
            "'---\\nname: my-skill\\ndescription: What it does and when to use it.\\n---'",
        )
    for index in range(1, len(lines)):
        if lines[index].rstrip() == _FENCE:
            return "".join(lines[1:index]), "".join(lines[index + 1 :]), 2
    raise SkillError(file, 1, "the front matter opened here is never closed by a '---' line")


def _skill(folder: Path, front: str, body: str, first: int, file: str) -> Skill:
    from agentensemble.untrusted import YamlInputError, YamlPath, parse_yaml

    lines: dict[YamlPath, int] = {}
    try:
        data = parse_yaml(
            front,
            what="the front matter",
            max_chars=MAX_FRONT_MATTER_CHARS,
            max_nodes=MAX_FRONT_MATTER_VALUES,
            max_depth=4,
            lines=lines,
        )
    except YamlInputError as error:
        line = None if error.line is None else error.line + first - 1
        shown = first if line is None else line
        raise SkillError(file, shown, f"the front matter is {error.problem}") from None

    def fail(key: str | None, message: str) -> SkillError:
        line = lines.get((key,)) if key else None
        return SkillError(file, first if line is None else line + first - 1, message)

    if not isinstance(data, dict):
        raise fail(None, "the front matter must be a mapping with name: and description:")
    name = _text(data, "name", fail, MAX_NAME)
    if not _NAME.fullmatch(name):
        raise fail(
            "name",
            f"name {name!r} must be lowercase letters, digits and single hyphens, not at either "
            "end (e.g. 'pdf-forms')",
        )
    if name != folder.name:
        raise fail("name", f"name {name!r} must match the skill's folder name {folder.name!r}")
    description = " ".join(_text(data, "description", fail, MAX_DESCRIPTION).split())
    return Skill(
        name=name,
        description=description,
        folder=folder,
        body=drop_hidden(body).strip(),
        license=_optional(data, "license", fail, MAX_DESCRIPTION),
        compatibility=_optional(data, "compatibility", fail, MAX_COMPATIBILITY),
        allowed_tools=_allowed_tools(data, fail),
        metadata=_metadata(data, fail),
    )


def _text(data: Mapping[str, Any], key: str, fail: Any, limit: int) -> str:
    if key not in data:
        raise fail(None, f"the front matter has no {key}: (name and description are required)")
    value = data[key]
    if not isinstance(value, str):
        raise fail(key, f"{key} must be text, got {type(value).__name__}")
    value = drop_hidden(value).strip()
    if not value:
        raise fail(key, f"{key} is empty")
    if len(value) > limit:
        raise fail(key, f"{key} is {len(value)} characters; at most {limit} are allowed")
    return value


def _optional(data: Mapping[str, Any], key: str, fail: Any, limit: int) -> str | None:
    return _text(data, key, fail, limit) if data.get(key) is not None else None


def _allowed_tools(data: Mapping[str, Any], fail: Any) -> tuple[str, ...]:
    value = data.get("allowed-tools")
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise fail("allowed-tools", "allowed-tools must be tool names separated by spaces")


def _metadata(data: Mapping[str, Any], fail: Any) -> dict[str, str]:
    value = data.get("metadata")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise fail("metadata", "metadata must be a mapping of names to text")
    for key, item in value.items():
        if isinstance(item, dict | list):
            raise fail("metadata", f"metadata.{key} must be text, not a mapping or a list")
    return {str(key): drop_hidden(str(item)) for key, item in value.items()}


__all__ = [
    "MAX_COMPATIBILITY",
    "MAX_DESCRIPTION",
    "MAX_FRONT_MATTER_CHARS",
    "MAX_NAME",
    "MAX_SKILL_BYTES",
    "SKILL_FILE",
    "Skill",
    "SkillError",
    "as_skill",
    "listing",
]
