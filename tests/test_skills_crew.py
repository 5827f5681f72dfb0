"""``skills:`` on an agent in a crew file: folders relative to the crew file, read when the
file is loaded, a broken skill reported at its crew-file line with the SKILL.md line."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentensemble.config import ConfigFileError, load_crew
from agentensemble.testing import ScriptedChatModel, tool_call

SKILL = "---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\nUse black ink.\n"


def write_crew(folder: Path, skills: str) -> Path:
    crew = folder / "crew.yaml"
    crew.write_text(
        "model: openai/gpt-4o-mini\n"
        "agents:\n"
        "  clerk:\n"
        "    role: Clerk\n"
        "    goal: File forms\n"
        f"    skills: {skills}\n"
        "tasks:\n"
        "  - {description: Fill the form, agent: clerk}\n"
    )
    return crew


def write_skill(folder: Path, text: str = SKILL) -> Path:
    skill = folder / "skills" / "pdf-forms"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(text)
    return skill


def test_skills_are_folders_beside_the_crew_file_whatever_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    skill = write_skill(project)
    crew = write_crew(project, "[skills/pdf-forms]")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    ensemble = load_crew(crew)

    agent = ensemble.agents[0]
    assert [(s.name, s.folder) for s in agent.skills] == [("pdf-forms", skill.resolve())]
    model = ScriptedChatModel([tool_call("load_skill", {"name": "pdf-forms"}), "Done in ink."])
    agent.llm = model
    assert ensemble.run().raw == "Done in ink."
    assert "- pdf-forms: Fill PDF forms." in str(model.requests[0].messages[0]["content"])
    assert str(model.requests[1].messages[-1]["content"]).startswith("Use black ink.")


def test_one_skill_may_be_written_without_a_list(tmp_path: Path) -> None:
    write_skill(tmp_path)
    assert [
        s.name for s in load_crew(write_crew(tmp_path, "skills/pdf-forms")).agents[0].skills
    ] == ["pdf-forms"]


@pytest.mark.parametrize(
    ("skills", "skill_md", "message"),
    [
        (
            "[skills/missing]",
            None,
            "crew.yaml:6: agents.clerk.skills[0]: {folder}/skills/missing: not a folder",
        ),
        (
            "[skills/pdf-forms]",
            "---\nname: pdf-forms\n---\n",
            "crew.yaml:6: agents.clerk.skills[0]: {folder}/skills/pdf-forms/SKILL.md:2: the front "
            "matter has no description:",
        ),
        ("[12]", None, "crew.yaml:6: agents.clerk.skills[0]: a skill is a folder path"),
        ("{a: b}", None, "crew.yaml:6: agents.clerk.skills: expected a list, got a mapping"),
    ],
)
def test_a_bad_skill_is_an_error_at_its_crew_file_line(
    tmp_path: Path, skills: str, skill_md: str | None, message: str
) -> None:
    if skill_md is not None:
        write_skill(tmp_path, skill_md)
    crew = write_crew(tmp_path, skills)
    with pytest.raises(ConfigFileError) as caught:
        load_crew(crew)
    assert str(caught.value).startswith(str(tmp_path / message.format(folder=tmp_path)))
