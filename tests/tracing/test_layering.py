"""Tracing observes the layers above it and imports none of them (ARCHITECTURE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

TRACING = Path(__file__).resolve().parents[2] / "agentensemble" / "tracing"
_ABOVE = ("agentensemble.execution", "agentensemble.workflows", "agentensemble.ensemble")


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_tracing_module_imports_the_executor_the_workflows_or_the_facade() -> None:
    modules = sorted(TRACING.glob("*.py"))
    assert modules
    for path in modules:
        wrong = {n for n in _imported(path) if n.startswith(_ABOVE)}
        assert not wrong, f"{path.name} imports {sorted(wrong)}"


def test_the_prompt_layout_the_trace_reads_is_the_one_the_executor_writes() -> None:
    from agentensemble._base.prompt_layout import context_end
    from agentensemble.execution import prompts
    from agentensemble.execution.prompts import ContextItem, build_user_prompt

    assert prompts.context_end is context_end
    items = [ContextItem("t1", "a", "one"), ContextItem("t2", "b", "two")]
    earlier = build_user_prompt("d", "e", items[:1])
    later = build_user_prompt("d", "e", items)
    end = context_end(earlier)
    assert end > 0 and later.startswith(earlier[:end])
    assert context_end(build_user_prompt("d", "e")) == -1
