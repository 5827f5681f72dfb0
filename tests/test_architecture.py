"""The house rules that a reader cannot check by eye, checked on every run.

- **No import circles** between the modules of ``agentensemble``, ``agentensemble_review`` and
  ``agentensemble_web``, counting imports inside functions and under ``TYPE_CHECKING`` (a lazy
  import is still a dependency), with one designed edge: ``agentensemble/tools/_approval.py`` is
  the core's one door to the optional review package.
- **One door per dependency**: a dependency's private internals (``dbos._...``, pydantic's
  private storage, ...) are reached only in its adapter module (``agentensemble/durable/_dbos.py``,
  ``agentensemble/llm/_litellm.py``); anything else is in ``ALLOWED_REACHES`` with a reason.
- **Layers**: every part of ``agentensemble`` sits in one layer of ``LAYERS`` and imports only
  from its own layer or those below, with the exceptions in ``UPWARD``.

Each list of exceptions fails when an entry is no longer needed, so they only shrink.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("agentensemble", "agentensemble_review", "agentensemble_web")

# -- the import graph


def _modules() -> dict[str, Path]:
    """Every module of the three packages by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imported(name: str, path: Path) -> set[str]:
    """The package modules that ``name`` imports anywhere in its body (functions, TYPE_CHECKING
    blocks and try/except included). ``from a import b`` is an edge to ``a.b`` when that is a
    module, else to ``a`` (a name defined by ``a`` itself)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.add(submodule if submodule in MODULES else base)
    return {target for target in targets if target in MODULES and target != name}


@functools.cache
def import_graph() -> dict[str, set[str]]:
    return {name: _imported(name, path) for name, path in MODULES.items()}


# The one designed edge: the core asks the optional review package through this module only.
DESIGNED = {("agentensemble.tools._approval", "agentensemble_review")}

# Circles being broken, one edge of each with its reason, so the test stays strict about every
# other edge (the test fails on a line that is no longer needed). None is left: keep it so.
PENDING: dict[tuple[str, str], str] = {}


def _allowed(source: str, target: str) -> bool:
    if (source, target) in PENDING:
        return True
    return any(
        source == allowed_source and (target == allowed or target.startswith(allowed + "."))
        for allowed_source, allowed in DESIGNED
    )


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(start: str) -> None:  # iterative: the graph is deep enough for recursion limits
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def a_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One concrete circle through the component's first module, for the failure message."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:  # breadth first: the shortest way back to the start
        node = queue.pop(0)
        for child in sorted(graph[node] & members):
            if child == start:
                return [*paths[node], start]
            if child not in paths:
                paths[child] = [*paths[node], child]
                queue.append(child)
    raise AssertionError(f"{component} is not strongly connected")


def _without_allowed_edges(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    return {
        source: {target for target in targets if not _allowed(source, target)}
        for source, targets in graph.items()
    }


def test_no_import_circles_counting_lazy_and_type_only_imports() -> None:
    graph = _without_allowed_edges(import_graph())
    circles = [" -> ".join(a_cycle(graph, c)) for c in strongly_connected(graph)]
    assert not circles, (
        "import circles (a type both sides need belongs below both; see ARCHITECTURE.md):\n"
        + "\n".join(circles)
    )


def test_every_pending_circle_edge_is_still_there() -> None:
    graph = import_graph()
    gone = [edge for edge in PENDING if edge[1] not in graph.get(edge[0], set())]
    assert not gone, f"no longer imported: delete these PENDING lines: {gone}"


def test_the_circle_finder_finds_lazy_and_type_only_circles(tmp_path: Path) -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    assert a_cycle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from agentensemble.agent import Agent\n"
        "def f():\n    from agentensemble import ensemble\n"
        "    import agentensemble_review.models\n"
    )
    assert _imported("agentensemble.m", module) == {
        "agentensemble.agent",
        "agentensemble.ensemble",
        "agentensemble_review.models",
    }


# -- the layers: the folder shows them, this table names them, the test keeps them

# Bottom first. Every top-level module and sub-package of ``agentensemble`` is in exactly one
# layer; a module imports only from its own layer or the layers below (lazy and type-only
# imports counted). ``_base/`` holds the private helpers every layer uses; the public modules at
# the top level stay where users import them from (docs/, API.md) and where pickles of run
# outputs and DBOS checkpoints name them.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "models and base",
        frozenset(
            {
                "_base",
                "attachments",
                "errors",
                "events",
                "guardrails",
                "hints",
                "logging",
                "outputs",
                "redaction",
                "run_context",
                "run_metrics",
                "steps",
                "task_memory",
                "templates",
                "trace_model",
                "untrusted",
            }
        ),
    ),
    ("model access and its policies", frozenset({"llm", "limits", "context_policy"})),
    ("tools and their sources, memory", frozenset({"tools", "skills", "mcp", "memory"})),
    ("agent and task", frozenset({"agent", "task", "_memory_wiring"})),
    ("execution", frozenset({"execution", "streaming"})),
    ("workflows", frozenset({"workflows"})),
    ("observability", frozenset({"tracing", "progress", "otel"})),
    ("the run and its facade", frozenset({"_run", "ensemble"})),
    (
        "above Ensemble",
        frozenset({"config", "cli", "__main__", "durable", "evals", "serve", "testing"}),
    ),
)
LAYER_OF = {unit: rank for rank, (_, units) in enumerate(LAYERS) for unit in units}

# Imports that reach a layer above, each with its reason (the test fails on a line no longer
# needed, so this list only shrinks).
UPWARD: dict[tuple[str, str], str] = {
    ("agentensemble.task", "agentensemble.execution.structured"): (
        "checks a Task's output_type when it is set"
    ),
}


def unit_of(module: str) -> str | None:
    """The top-level module or sub-package of ``agentensemble`` that ``module`` belongs to."""
    parts = module.split(".")
    return parts[1] if parts[0] == "agentensemble" and len(parts) > 1 else None


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every edge of ``graph`` from a module to one in a higher layer."""
    found = []
    for source, targets in graph.items():
        source_unit = unit_of(source)
        if source_unit is None:
            continue
        for target in targets:
            target_unit = unit_of(target)
            if target_unit is None or target_unit == source_unit:
                continue
            if LAYER_OF[target_unit] > LAYER_OF[source_unit]:
                found.append((source, target))
    return sorted(found)


def test_every_part_of_the_package_has_one_layer() -> None:
    units = {unit for name in MODULES if (unit := unit_of(name)) is not None}
    placed = [unit for _, members in LAYERS for unit in members]
    assert len(placed) == len(set(placed)), "a unit is in two layers"
    assert units - set(placed) == set(), "give each new module or package a layer in LAYERS"
    assert set(placed) - units == set(), "these are gone: delete them from LAYERS"


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    found = [edge for edge in upward_imports(import_graph()) if edge not in UPWARD]
    lines = [
        f"{source} -> {target} ({LAYERS[LAYER_OF[unit_of(source) or '']][0]} -> "
        f"{LAYERS[LAYER_OF[unit_of(target) or '']][0]})"
        for source, target in found
    ]
    assert not found, "imports from a layer above (move the shared type below both):\n" + (
        "\n".join(lines)
    )


def test_every_upward_exception_is_still_there() -> None:
    gone = [edge for edge in UPWARD if edge not in upward_imports(import_graph())]
    assert not gone, f"no longer imported upward: delete these UPWARD lines: {gone}"


def test_the_layer_check_finds_an_import_from_above() -> None:
    graph = {
        "agentensemble.outputs": {"agentensemble.workflows.step"},  # base -> workflows: up
        "agentensemble.workflows.step": {"agentensemble.outputs"},  # down: fine
        "agentensemble.llm.types": {"agentensemble.llm.cost", "agentensemble.limits"},  # same
        "agentensemble_review.models": {"agentensemble.ensemble"},  # another package: not ours
    }
    assert upward_imports(graph) == [("agentensemble.outputs", "agentensemble.workflows.step")]


# -- private reaches into dependencies

ADAPTERS = {"agentensemble/durable/_dbos.py", "agentensemble/llm/_litellm.py"}
DEPENDENCIES = (
    "dbos",
    "pydantic",
    "pydantic_core",
    "litellm",
    "mcp",
    "uvicorn",
    "a2a",
    "starlette",
)
_DEPENDENCY = "|".join(DEPENDENCIES)
# Text patterns, matched on every line (code, comments and docstrings alike: a comment that names
# an internal is usually beside the code that uses it).
REACHES = {
    # a dunder (``uvicorn.__version__``) is public; one leading underscore is not
    "private module": re.compile(rf"(?<![\w.])(?:{_DEPENDENCY})(?:\.\w+)*\._(?!_\w+__\b)\w"),
    "_get_dbos_instance": re.compile(r"\b_get_dbos_instance\b"),
    "get_local_dbos_context": re.compile(r"\bget_local_dbos_context\b"),
    "_sys_db": re.compile(r"\b_sys_db\b"),
    "__pydantic_private__": re.compile(r"__pydantic_private__"),
    "pydantic._internal": re.compile(r"\bpydantic(?:_core)?\._internal\b"),
    "dataclasses._": re.compile(r"\bdataclasses\._\w"),
    # a private attribute read by name: on a dependency's object it is a reach (our own markers,
    # named _agentensemble..., are not)
    "getattr private": re.compile(
        r"getattr\((?!self\b)[^,()]+,\s*[\"']_(?!_|agentensemble)\w*[\"']"
    ),
}

# A reach outside the adapters that stays, or goes with another branch of issue 37:
# (file, pattern name) -> reason. The lead deletes the "removed by" lines after merging them.
_TO_DBOS_ADAPTER = "removed by seams-dbos (into durable/_dbos.py, or public API)"
ALLOWED_REACHES: dict[tuple[str, str], str] = {
    # kept, outside an adapter (SEAMS.md 1.2 verdict "keep")
    ("agentensemble/outputs.py", "__pydantic_private__"): (
        "P3/P4 kept: the pickle state's layout and equality over the private store "
        "(tests/test_outputs_pickle.py)"
    ),
    ("agentensemble/workflows/step.py", "getattr private"): (
        "our own marker on an exception we raise, not a dependency's attribute"
    ),
    ("agentensemble/llm/_litellm_worker.py", "getattr private"): (
        "L1 kept while litellm is pinned exactly; belongs in llm/_litellm.py (llm/ is real-models')"
    ),
}


def _private_imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``from dbos import _x`` / ``from dbos._y import z`` / ``import dbos._y``: what a text
    pattern misses when the private name is on a later line of the import."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            top, *rest = node.module.split(".")
            if top in (*DEPENDENCIES, "dataclasses") and (
                any(part.startswith("_") for part in rest)
                or any(alias.name.startswith("_") for alias in node.names)
            ):
                yield node.lineno, "private module"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top, *rest = alias.name.split(".")
                if top in (*DEPENDENCIES, "dataclasses") and any(
                    part.startswith("_") for part in rest
                ):
                    yield node.lineno, "private module"


@functools.cache
def reaches() -> dict[tuple[str, str], list[str]]:
    """Every private reach outside the adapters: (file, pattern name) -> the lines."""
    found: dict[tuple[str, str], list[str]] = {}
    for path in MODULES.values():
        relative = path.relative_to(REPO).as_posix()
        if relative in ADAPTERS:
            continue
        text = path.read_text()
        lines = text.splitlines()
        hits = {
            (number, name)
            for number, line in enumerate(lines, 1)
            for name, pattern in REACHES.items()
            if pattern.search(line)
        }
        hits |= set(_private_imports(ast.parse(text, relative)))
        for number, name in sorted(hits):
            found.setdefault((relative, name), []).append(
                f"{relative}:{number}: {lines[number - 1].strip()}"
            )
    return found


def test_no_private_reach_into_a_dependency_outside_its_adapter() -> None:
    unexplained = {key: lines for key, lines in reaches().items() if key not in ALLOWED_REACHES}
    assert not unexplained, (
        "a dependency's private internals outside its adapter (durable/_dbos.py, "
        "llm/_litellm.py; see SEAMS.md):\n"
        + "\n".join(line for lines in unexplained.values() for line in lines)
    )


def test_every_allowed_reach_is_still_there() -> None:
    gone = sorted(set(ALLOWED_REACHES) - set(reaches()))
    assert not gone, f"no longer reached: delete these ALLOWED_REACHES lines: {gone}"


def test_the_reach_patterns_catch_each_kind_of_reach(tmp_path: Path) -> None:
    table = {
        "from dbos._context import get_local_dbos_context": {
            "private module",
            "get_local_dbos_context",
        },
        "from pydantic._internal._model_construction import x": {
            "private module",
            "pydantic._internal",
        },
        "instance = dbos._dbos._get_dbos_instance()": {"private module", "_get_dbos_instance"},
        "engine = client._sys_db.engine": {"_sys_db"},
        "store = model.__pydantic_private__": {"__pydantic_private__"},
        "fields = dataclasses._FIELDS": {"dataclasses._"},
        'kind = getattr(dataclasses, "_FIELD", None)': {"getattr private"},
        'quiet = getattr(handler, "_agentensemble", False)': set(),
        "from dataclasses import _MISSING_TYPE": {"private module"},
        "import litellm._logging": {"private module"},
        "from starlette.routing import Route": set(),
        "from dbos import DBOS": set(),
    }
    for line, expected in table.items():
        matched = {name for name, pattern in REACHES.items() if pattern.search(line)}
        matched |= {name for _, name in _private_imports(ast.parse(line))}
        assert matched == expected, line
    spread = ast.parse("from dbos import (\n    DBOS,\n    _get_dbos_instance,\n)\n")
    assert list(_private_imports(spread)) == [(1, "private module")]
