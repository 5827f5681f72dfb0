"""Every python block of README.md and docs/*.md runs, so the docs cannot drift from the code.

Blocks run offline: ``openai/...`` model names reach a local OpenAI-compatible server (through
``OPENAI_BASE_URL``) that answers with text, or with JSON shaped by the schema a typed task sends.
A block that needs setup names a scaffold (tests/docs/scaffolds.py) in an HTML comment on the
line before its fence; ``<!-- continue -->`` runs it after the previous block of its file;
``<!-- no-run -->`` skips a block that cannot run offline (kept rare).
"""

from __future__ import annotations

import json
import re
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentensemble
from agentensemble.cli._offline import _example
from agentensemble.testing import OpenAICompatibleServer

from ._blocks import Block, blocks_of, doc_files
from .scaffolds import SCAFFOLDS

ROOT = Path(agentensemble.__file__).absolute().parent.parent
BLOCKS = [block for path in doc_files(ROOT) for block in blocks_of(path, ROOT)]
HOW_TO_MARK = (
    "Fix the block, or say what it needs in an HTML comment on the line before its fence: "
    "<!-- scaffold: NAME --> (setups in tests/docs/scaffolds.py: {names}), <!-- continue --> "
    "(run after the previous block of the file), or <!-- no-run --> (cannot run offline)."
)
_SCHEMA = re.compile(r"JSON schema:\n(\{.*\})", re.S)


def docs_provider(body: dict[str, Any]) -> str:
    """Answers like a cooperative model: schema-shaped JSON when asked for it, else text."""
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if schema is None:
        prompt = str((body.get("messages") or [{}])[-1].get("content") or "")
        found = _SCHEMA.search(prompt)
        schema = json.loads(found.group(1)) if found else None
    if isinstance(schema, dict):
        return json.dumps(_example(schema, schema.get("$defs", {})))
    return "A scripted answer."


@pytest.fixture(scope="module")
def provider() -> Iterator[OpenAICompatibleServer]:
    server = OpenAICompatibleServer()
    server.set_responder(docs_provider)
    with server:
        yield server


_namespaces: dict[Path, dict[str, Any]] = {}


def test_a_block_with_hidden_setup_says_so_to_its_reader() -> None:
    # a reader copies the block as it is: one that needs definitions it does not show starts
    # with a visible "# fragment: <what it assumes>" line (the scaffold is only for the test)
    hidden = [
        block.where
        for block in BLOCKS
        if block.scaffold is not None and not block.code.lstrip().startswith("# fragment: ")
    ]
    assert not hidden, f"start these blocks with '# fragment: <what they assume>': {hidden}"


def test_the_docs_have_python_blocks() -> None:
    assert any(block.file.name == "README.md" for block in BLOCKS)
    assert len({block.file for block in BLOCKS}) >= 5


@pytest.mark.parametrize("block", BLOCKS, ids=[block.where for block in BLOCKS])
def test_docs_block_runs(
    block: Block,
    provider: OpenAICompatibleServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    if block.no_run:
        pytest.skip("marked <!-- no-run -->")
    names = ", ".join(sorted(SCAFFOLDS))
    monkeypatch.setenv("OPENAI_BASE_URL", provider.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs")
    monkeypatch.delenv("AGENTENSEMBLE_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    if block.continues:
        namespace = _namespaces.get(block.file)
        if namespace is None:
            pytest.fail(f"{block.where}: <!-- continue --> but no earlier block of the file ran")
    else:
        namespace = {"__name__": "__docs__"}
    if block.scaffold is not None:
        setup = SCAFFOLDS.get(block.scaffold)
        if setup is None:
            pytest.fail(f"{block.where}: unknown scaffold {block.scaffold!r} (known: {names})")
        exec(compile(setup, f"<scaffold {block.scaffold}>", "exec"), namespace)
    try:
        exec(compile(block.code, block.where, "exec"), namespace)
    except BaseException as error:  # SystemExit from a block is a failure too
        trace = "".join(traceback.format_exception(type(error), error, error.__traceback__)[-3:])
        pytest.fail(
            f"{block.where}: the python block failed: {type(error).__name__}: {error}\n"
            f"{trace}\n{HOW_TO_MARK.format(names=names)}",
            pytrace=False,
        )
    _namespaces[block.file] = namespace
