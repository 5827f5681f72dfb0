"""Built-in tools, safe by default: every tool that acts on the world is bounded, confined and,
where a mistake costs, approval-gated.

``Calculator()``, ``CurrentDateTime()``, ``JsonQuery()``, ``FileRead(root)``, ``FileWrite(root)``
(asks the reviewer by default), ``ListDirectory(root)``, ``HttpFetch(allow=[...])`` and
``RunCommand(allow=[...], cwd=None)`` (asks the reviewer by default). Every refusal is a failed
tool result saying why (the model sees ``Error: ...``). See docs/tools.md.
"""

from agentensemble.tools.builtin.calculator import Calculator
from agentensemble.tools.builtin.clock import CurrentDateTime
from agentensemble.tools.builtin.files import FileRead, FileWrite, ListDirectory
from agentensemble.tools.builtin.http_fetch import HttpFetch
from agentensemble.tools.builtin.json_query import JsonQuery
from agentensemble.tools.builtin.run_command import RunCommand

__all__ = [
    "Calculator",
    "CurrentDateTime",
    "FileRead",
    "FileWrite",
    "HttpFetch",
    "JsonQuery",
    "ListDirectory",
    "RunCommand",
]
