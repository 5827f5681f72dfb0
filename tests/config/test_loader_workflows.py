"""Crew files carry the workflow settings: parallel graphs, the manager and peer delegation."""

from __future__ import annotations

import pytest

from agentensemble import ParallelErrorStrategy, Workflow
from agentensemble.config import ConfigFileError, load_crew


def test_parallel_settings_reach_the_ensemble() -> None:
    ensemble = load_crew(
        {
            "model": "openai/gpt-4o-mini",
            "workflow": "parallel",
            "max_concurrency": 2,
            "parallel_error_strategy": "continue_on_error",
            "tasks": {"a": {"description": "A"}, "b": {"description": "B", "context": ["a"]}},
        }
    )

    assert ensemble.workflow is Workflow.PARALLEL
    assert ensemble.max_concurrency == 2
    assert ensemble.parallel_error_strategy is ParallelErrorStrategy.CONTINUE_ON_ERROR


def test_a_manager_and_delegating_agents_from_a_crew_file() -> None:
    ensemble = load_crew(
        {
            "model": "openai/gpt-4o-mini",
            "workflow": "hierarchical",
            "manager_model": "openai/gpt-4o",
            "manager_max_iterations": 5,
            "max_delegation_depth": 1,
            "agents": {
                "researcher": {"role": "Researcher", "goal": "Facts", "allow_delegation": True},
                "writer": {"role": "Writer", "goal": "Write"},
            },
            "tasks": {"report": {"description": "Report"}},
        }
    )

    assert ensemble.workflow is Workflow.HIERARCHICAL
    assert ensemble.manager_llm == "openai/gpt-4o"
    assert (ensemble.manager_max_iterations, ensemble.max_delegation_depth) == (5, 1)
    assert ensemble.agents[0].allow_delegation


def test_a_bad_workflow_setting_names_the_key() -> None:
    with pytest.raises(ConfigFileError, match="max_concurrency"):
        load_crew({"max_concurrency": 0, "tasks": [{"description": "A"}]})
