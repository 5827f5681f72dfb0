"""Skills: SKILL.md folders an agent loads when a task needs them (docs/skills.md).

``Skill.from_folder(path)`` reads and checks a folder; ``Agent(skills=[...])`` (or ``skills:``
in a crew file) lists each skill's name and description in the agent's prompt and gives it
``load_skill`` and ``read_skill_file``, which read inside the skill's folder only and never run
anything.
"""

from agentensemble.skills._skill import (
    MAX_DESCRIPTION,
    MAX_NAME,
    MAX_SKILL_BYTES,
    Skill,
    SkillError,
)

__all__ = ["MAX_DESCRIPTION", "MAX_NAME", "MAX_SKILL_BYTES", "Skill", "SkillError"]
