"""``import agentensemble`` pulls in no optional part: the CI check that keeps import at its floor.

Every optional part (an extra's package, or one of our own subpackages that needs one) is imported
on first use only. A fresh interpreter imports the package and everything its ``__all__`` names,
then the test lists which forbidden modules arrived. A new feature that adds one fails here with
the module's name, long before a benchmark would notice.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Third-party packages that belong to an extra, or cost far more than the core's floor.
OPTIONAL_PACKAGES = (
    "litellm",
    "openai",
    "mcp",
    "a2a",
    "dbos",
    "sqlalchemy",
    "psycopg",
    "psycopg2",
    "starlette",
    "uvicorn",
    "opentelemetry",
    "selenium",
    "yaml",
    "numpy",
    "agentensemble_review",
    "agentensemble_web",
)

#: Our own subpackages that exist for an optional part or a separate entry point.
OPTIONAL_SUBPACKAGES = (
    "agentensemble.cli",
    "agentensemble.config",
    "agentensemble.durable",
    "agentensemble.evals",
    "agentensemble.mcp",
    "agentensemble.memory",
    "agentensemble.otel",
    "agentensemble.serve",
    "agentensemble.testing",
    "agentensemble.tools.builtin",
)

PROBE = """
import json, sys
import agentensemble
for name in agentensemble.__all__:
    getattr(agentensemble, name)
print(json.dumps(sorted(sys.modules)))
"""


def loaded_by_import() -> list[str]:
    """Every module name present after importing agentensemble in a fresh interpreter."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    modules: list[str] = json.loads(result.stdout)
    return modules


def is_optional(module: str) -> bool:
    top = module.split(".")[0]
    if top in OPTIONAL_PACKAGES:
        return True
    return any(module == sub or module.startswith(sub + ".") for sub in OPTIONAL_SUBPACKAGES)


def test_import_agentensemble_loads_no_optional_part() -> None:
    offenders = [module for module in loaded_by_import() if is_optional(module)]
    assert offenders == [], (
        "import agentensemble pulled in optional parts; import them on first use: "
        + ", ".join(offenders)
    )


def test_the_rule_recognises_optional_modules() -> None:
    cases = {
        "litellm": True,
        "litellm.main": True,
        "agentensemble.memory": True,
        "agentensemble.memory._sqlite": True,
        "agentensemble.memorytools": False,
        "agentensemble.tools.builtin.files": True,
        "agentensemble.tools.resolver": False,
        "pydantic": False,
        "structlog": False,
    }
    assert {name: is_optional(name) for name in cases} == cases


BARE = """
import json, sys
import agentensemble
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("agentensemble", "pydantic")))))
"""

BUILT = """
import json, sys
from agentensemble import Agent, Ensemble, Task, tool
from pydantic import BaseModel

def built(cls):
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("agentensemble") and sub.__dict__.get("__pydantic_complete__"):
            yield f"{sub.__module__}.{sub.__qualname__}"
        yield from built(sub)

found = {"built": sorted(set(built(BaseModel))), "metadata": "importlib.metadata" in sys.modules}
print(json.dumps(found))
"""


def run_probe(probe: str) -> object:
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_bare_import_loads_nothing_but_the_package_itself() -> None:
    # every public name is imported on first use: `import agentensemble` costs next to nothing
    # (the package, its one lazy-export helper, and the finder for the helpers' old paths)
    assert run_probe(BARE) == [
        "agentensemble",
        "agentensemble._base",
        "agentensemble._base.lazy",
        "agentensemble._base.old_paths",
    ]


def test_every_public_name_resolves_to_the_object_its_module_defines() -> None:
    import importlib

    import agentensemble

    for name, module in agentensemble._LAZY.items():
        assert getattr(agentensemble, name) is getattr(importlib.import_module(module), name)
    assert set(agentensemble.__all__) == {*agentensemble._LAZY, "__version__"}
    assert set(agentensemble.__all__) <= set(dir(agentensemble))


def test_importing_the_core_classes_builds_no_pydantic_model() -> None:
    # a model built at import time costs its schema build, and the first one scans every
    # installed distribution's entry points for pydantic plugins (importlib.metadata)
    assert run_probe(BUILT) == {"built": [], "metadata": False}


USER_LINE = """
import json, sys
from agentensemble import Agent, Ensemble, Task, tool
print(json.dumps(sorted(m for m in sys.modules if m.startswith("agentensemble"))))
"""

#: What a plain sequential script never needs at import: other workflow kinds, the model
#: classes, retries and rate limits (a real model call imports them), tool pipelines and typed
#: tools, and keeping a run's preparation between runs (a run imports it).
FIRST_USE_ONLY = (
    "agentensemble.workflows._reuse",
    "agentensemble.workflows.delegation",
    "agentensemble.workflows.fan_out",
    "agentensemble.workflows.graph",
    "agentensemble.workflows.hierarchical",
    "agentensemble.workflows.loop",
    "agentensemble.workflows.nested",
    "agentensemble.llm.litellm_model",
    "agentensemble.llm.rate_limit",
    "agentensemble.llm.retry",
    "agentensemble.tools.pipeline",
    "agentensemble.tools.typed",
)


def test_a_scripts_first_line_loads_no_workflow_kind_or_model_class_it_does_not_use() -> None:
    loaded = set(run_probe(USER_LINE))  # type: ignore[arg-type]
    assert sorted(loaded & set(FIRST_USE_ONLY)) == []


FIRST_RUN = """
import json, sys
from agentensemble import Agent, Ensemble, Task, tool
line = sorted(sys.modules)
from agentensemble.llm.types import ChatResponse, ToolCall

class OneCall:
    model = "scripted"

    async def complete(self, messages, **_):
        if messages[-1]["role"] == "tool":
            return ChatResponse(content="done", finish_reason="stop")
        call = ToolCall(id="c1", name="echo", arguments='{"value": "x"}')
        return ChatResponse(tool_calls=[call], finish_reason="tool_calls")

@tool
def echo(value: str) -> str:
    \"\"\"Echo a value.\"\"\"
    return value

agent = Agent(role="r", goal="g", tools=[echo], llm=OneCall())
assert Ensemble(tasks=[Task(description="d", agent=agent)]).run().raw == "done"
run = sorted(sys.modules)
print(json.dumps({"line": line, "run": run}))
"""

#: What a first run on a ChatModel never needs: pydantic's TypeAdapter (typed outputs and
#: ``parsed_as`` only), and the LLM class with its retries, rate limits and lanes (a model name
#: or an LLM object loads them).
NOT_FOR_A_PLAIN_RUN = (
    "pydantic.type_adapter",
    "agentensemble.llm.litellm_model",
    "agentensemble.llm.rate_limit",
    "agentensemble.llm.retry",
    "tenacity",
)


def test_the_line_and_a_first_run_on_a_chat_model_load_nothing_they_do_not_use() -> None:
    loaded: dict[str, list[str]] = run_probe(FIRST_RUN)  # type: ignore[assignment]
    assert sorted(set(loaded["line"]) & set(NOT_FOR_A_PLAIN_RUN)) == []
    assert sorted(set(loaded["run"]) & set(NOT_FOR_A_PLAIN_RUN)) == []


def test_the_model_package_resolves_every_name_on_first_use() -> None:
    import importlib

    from agentensemble import llm

    for name, module in llm._LAZY.items():
        assert getattr(llm, name) is getattr(importlib.import_module(module), name)
    assert set(llm.__all__) == set(llm._LAZY)


def test_the_tools_package_resolves_every_name_on_first_use() -> None:
    import importlib

    from agentensemble import tools

    for name, module in tools._LAZY.items():
        assert getattr(tools, name) is getattr(importlib.import_module(module), name)
    assert set(tools.__all__) == set(tools._LAZY)


def test_the_memory_package_resolves_every_name_on_first_use() -> None:
    import importlib

    from agentensemble import memory

    for name, module in memory._LAZY.items():
        assert getattr(memory, name) is getattr(importlib.import_module(module), name)
    assert set(memory.__all__) == set(memory._LAZY)


def test_the_lazy_packages_refuse_unknown_names_and_list_their_public_ones() -> None:
    import pytest

    import agentensemble
    from agentensemble import llm, memory, tools

    for package in (agentensemble, llm, memory, tools):
        with pytest.raises(
            AttributeError, match=f"module '{package.__name__}' has no attribute 'nope'"
        ):
            package.nope  # noqa: B018
        assert not hasattr(package, "nope")
        assert set(package._LAZY) <= set(dir(package))
