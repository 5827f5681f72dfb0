"""By construction: outside data (files, model and tool output, servers' answers) is parsed one
way, by ``agentensemble.untrusted`` (bounded in size, depth and time), never by the standard
library's quadratic ``html.parser`` or a raw ``json.loads`` / ``yaml.load`` / ``yaml.safe_load``.

Every other call in the three packages is on the allow-list with the reason its input is
trusted (our own files, our own database, a value we have just serialised). A new call is either
``untrusted``'s or a new entry here, with its reason, for a reviewer to judge."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import agentensemble

ROOT = Path(agentensemble.__file__).absolute().parent.parent
PACKAGES = ("agentensemble", "agentensemble_web", "agentensemble_review")
THE_ONE_MODULE = "agentensemble/untrusted.py"

FORBIDDEN_CALLS = {
    ("json", "loads"),
    ("json", "load"),
    ("yaml", "load"),
    ("yaml", "load_all"),
    ("yaml", "safe_load"),
    ("yaml", "safe_load_all"),
    ("yaml", "full_load"),
    ("yaml", "unsafe_load"),
}
FORBIDDEN_MODULES = ("html.parser",)

#: (file, call) -> why its input is trusted. Each entry must still be used (no stale entries).
ALLOWED: dict[tuple[str, str], str] = {
    ("agentensemble/serve/_run_api_durable.py", "json.loads"): (
        "a review decision's record the run API wrote itself (json.dumps) to its own table"
    ),
    ("agentensemble/tracing/_records.py", "json.loads"): (
        "a round trip of a value json.dumps has just written (to plain JSON types)"
    ),
    ("agentensemble/durable/_reuse.py", "json.loads"): (
        "a round trip of the run's inputs json.dumps has just written (a canonical form)"
    ),
    ("agentensemble/durable/_forks.py", "json.loads"): (
        "a round trip of a fork's new inputs json.dumps has just written (kept as JSON)"
    ),
    ("agentensemble/durable/_steps.py", "json.loads"): (
        "a round trip of a step's value json.dumps has just written"
    ),
    ("agentensemble/cli/memory_command.py", "json.loads"): (
        "a round trip of metadata json.dumps has just written, redacted as text"
    ),
    ("agentensemble/llm/cost.py", "json.loads"): (
        "the price table shipped inside the installed litellm package"
    ),
    ("agentensemble/tools/builtin/json_query.py", "json.loads"): (
        "one quoted key of a query path, a string literal: no nesting, bounded by the query"
    ),
    ("agentensemble/testing/_server_http.py", "json.loads"): (
        "the test double's requests, from our own client in the test's process"
    ),
    ("agentensemble/memory/postgres.py", "json.loads"): (
        "a metadata column of our own table, written by json.dumps of a validated dict"
    ),
    ("agentensemble/memory/sqlite.py", "json.loads"): (
        "a metadata column of our own table, written by json.dumps of a validated dict"
    ),
    ("agentensemble_web/store.py", "json.loads"): (
        "rows of the console's own database, written by json.dumps of sanitised payloads"
    ),
}


def python_files() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def uses(path: Path) -> list[tuple[str, int]]:
    """The forbidden readers ``path`` calls or imports: ``(name, line)``."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and (owner.id, node.func.attr) in FORBIDDEN_CALLS:
                found.append((f"{owner.id}.{node.func.attr}", node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.module in ("json", "yaml"):
            for alias in node.names:
                if (node.module, alias.name) in FORBIDDEN_CALLS:
                    found.append((f"{node.module}.{alias.name}", node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.module in FORBIDDEN_MODULES:
            found.append((node.module, node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.module == "html":
            found += [("html.parser", node.lineno) for a in node.names if a.name == "parser"]
        elif isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name in FORBIDDEN_MODULES]
    return found


def test_outside_data_is_parsed_only_by_the_untrusted_module() -> None:
    offending = []
    for path in python_files():
        name = path.relative_to(ROOT).as_posix()
        if name == THE_ONE_MODULE:
            continue
        for call, line in uses(path):
            if (name, call) not in ALLOWED:
                offending.append(f"{name}:{line}: {call}")
    assert not offending, (
        "parse outside data with agentensemble.untrusted (parse_json, html_text), or add the "
        "call to ALLOWED with the reason its input is trusted:\n" + "\n".join(offending)
    )


@pytest.mark.parametrize(("name", "call"), sorted(ALLOWED))
def test_every_allowed_call_is_still_there(name: str, call: str) -> None:
    assert call in [c for c, _ in uses(ROOT / name)], f"stale allow-list entry: {name} {call}"


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("import json\njson.loads(x)\n", ["json.loads"]),
        ("from json import loads\n", ["json.loads"]),
        ("import yaml\nyaml.safe_load(x)\n", ["yaml.safe_load"]),
        ("from html.parser import HTMLParser\n", ["html.parser"]),
        ("import html.parser\n", ["html.parser"]),
        ("from html import parser\n", ["html.parser"]),
        ("from agentensemble.untrusted import parse_json\nparse_json(x)\n", []),
        ("import html\nhtml.escape(x)\n", []),
    ],
)
def test_the_check_finds_each_forbidden_reader(
    tmp_path: Path, source: str, found: list[str]
) -> None:
    path = tmp_path / "module.py"
    path.write_text(source)
    assert [call for call, _ in uses(path)] == found
