"""The ``skills:`` of an agent in a crew file: SKILL.md folders, relative to the file's folder.

```yaml
agents:
  clerk: {role: Clerk, goal: Fill forms, skills: [skills/pdf-forms]}
```

Each folder is read here, so a broken skill is reported at its line in the crew file, with the
SKILL.md file and line that are wrong.
"""

from __future__ import annotations

from typing import Any

from agentensemble.config._crew_imports import current_crew_folder
from agentensemble.config._crew_paths import in_folder
from agentensemble.config._positions import Located, Path
from agentensemble.config._values import as_list
from agentensemble.skills._skill import Skill, SkillError


def skills_from(doc: Located, path: Path, value: Any) -> list[Skill]:
    """Each entry of ``skills:`` read as a skill folder (relative to the crew file's folder)."""
    folder = current_crew_folder()
    skills: list[Skill] = []
    for index, item in enumerate(as_list(doc, path, value)):
        if not isinstance(item, str) or not item.strip():
            raise doc.error((*path, index), "a skill is a folder path (text), e.g. skills/my-skill")
        try:
            skills.append(Skill.from_folder(in_folder(item, folder) if folder else item))
        except SkillError as error:
            raise doc.error((*path, index), str(error)) from None
    return skills


__all__ = ["skills_from"]
