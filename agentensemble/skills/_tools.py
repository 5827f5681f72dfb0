"""``load_skill`` and ``read_skill_file``: how an agent reads its skills, and nothing more.

Both tools only read. ``read_skill_file`` is ``FileRead`` rooted at the skill's folder, so a
skill's files get the file tools' confinement exactly: no ``..``, no absolute path, no symlink
followed anywhere below the folder, a size bound, binary files refused. Nothing in a skill is
ever run by these tools: a script in ``scripts/`` is text to them. Running one takes a command
tool (``RunCommand``) the agent was given separately, with its own allow-list and approval.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import BaseModel, Field

from agentensemble._base.regular_file import FolderTooLarge, regular_files
from agentensemble.redaction import drop_hidden
from agentensemble.skills._skill import SKILL_FILE, Skill
from agentensemble.tools.builtin._base import BuiltinTool, refuse
from agentensemble.tools.builtin.files import FileRead, FileReadInput

MAX_FILE_BYTES = 200_000
"""A skill's file larger than this is refused by ``read_skill_file``."""
MAX_LISTED_FILES = 100
"""Files of a skill's folder listed by ``load_skill``, at most."""
MAX_WALKED = 10_000
"""Files and folders of a skill looked at to list its files, at most."""
MAX_WALK_DEPTH = 16
"""Folders of a skill looked into, at most this deep."""


class LoadSkillInput(BaseModel):
    name: Annotated[str, Field(description="The skill's name, as listed under Skills")]


class ReadSkillFileInput(BaseModel):
    name: Annotated[str, Field(description="The skill's name")]
    path: Annotated[str, Field(description="A file in the skill, e.g. 'references/guide.md'")]


class _SkillTool:
    """The agent's skills by name, and a refusal naming them for an unknown one."""

    skills: dict[str, Skill]

    def skill(self, name: str) -> Skill:
        found = self.skills.get(name.strip())
        if found is None:
            refuse(f"no skill named {name!r}; the skills are: {', '.join(self.skills)}")
        return found


class LoadSkill(_SkillTool, BuiltinTool[LoadSkillInput]):
    """A skill's instructions (SKILL.md without its front matter) and the list of its files."""

    default_name = "load_skill"

    def __init__(self, skills: Sequence[Skill], *, name: str | None = None) -> None:
        self._init_name(name)
        self.skills = {skill.name: skill for skill in skills}
        self.description = "Load a skill's instructions and the list of its files."

    def do_execute(self, input: LoadSkillInput) -> str:
        skill = self.skill(input.name)
        files = _files(skill)
        listed = "\n".join(f"- {path}" for path in files) if files else "(none)"
        return (
            f"{skill.body or '(the skill has no instructions beyond its description)'}\n\n"
            f"Files of skill {skill.name} (read with read_skill_file; nothing here is run):\n"
            f"{listed}"
        )


class ReadSkillFile(_SkillTool, BuiltinTool[ReadSkillFileInput]):
    """One text file of a skill, read inside the skill's folder only (as ``FileRead``)."""

    default_name = "read_skill_file"

    def __init__(self, skills: Sequence[Skill], *, name: str | None = None) -> None:
        self._init_name(name)
        self.skills = {skill.name: skill for skill in skills}
        self._readers: dict[str, FileRead] = {}
        self.description = (
            "Read a text file of a skill; path is relative to the skill's folder "
            f"(no '..'; at most {MAX_FILE_BYTES} bytes)."
        )

    def do_execute(self, input: ReadSkillFileInput) -> str:
        skill = self.skill(input.name)
        reader = self._readers.get(skill.name)
        if reader is None:
            reader = FileRead(skill.folder, max_bytes=MAX_FILE_BYTES)
            self._readers[skill.name] = reader
        return drop_hidden(reader.do_execute(FileReadInput(path=input.path)))


def _files(skill: Skill) -> list[str]:
    """The skill's regular files but SKILL.md, relative, sorted; symlinks are left out (never
    followed), hidden files and folders too; at most ``MAX_LISTED_FILES`` (then a note). The
    walk is iterative and bounded (``MAX_WALKED`` names, ``MAX_WALK_DEPTH`` levels): a folder
    nested 1,500 deep made ``os.walk`` raise ``RecursionError``, so no skill loaded."""
    found: list[str] = []
    walked = regular_files(skill.folder, max_entries=MAX_WALKED, max_depth=MAX_WALK_DEPTH)
    try:
        for path in walked:
            relative = path.relative_to(skill.folder).as_posix()
            if relative != SKILL_FILE:
                found.append(relative)
            if len(found) > MAX_LISTED_FILES:
                return [
                    *found[:MAX_LISTED_FILES],
                    f"(more files not listed; over {MAX_LISTED_FILES})",
                ]
    except FolderTooLarge:
        found.append("(more files not listed: the folder is larger or deeper than is looked at)")
    return found


def without_skill_tools(tools: Sequence[object]) -> list[object]:
    """``tools`` without the skill tools an earlier validation added."""
    return [tool for tool in tools if not isinstance(tool, _SkillTool)]


def skill_tools(
    skills: Sequence[Skill],
) -> list[BuiltinTool[LoadSkillInput] | BuiltinTool[ReadSkillFileInput]]:
    """The two tools an agent with ``skills`` gets."""
    return [LoadSkill(skills), ReadSkillFile(skills)]


__all__ = [
    "MAX_FILE_BYTES",
    "MAX_LISTED_FILES",
    "LoadSkill",
    "LoadSkillInput",
    "ReadSkillFile",
    "ReadSkillFileInput",
    "skill_tools",
    "without_skill_tools",
]
