"""Serving ensembles to callers outside the process: an MCP server, an A2A app, the run API and
an AG-UI app for a product's front end, and remote A2A agents used as tools. Each part lives
behind its extra (``[mcp]``, ``[a2a]``, ``[serve]``, ``[ag-ui]``) and is loaded only when its name
is used, so ``import agentensemble.serve`` loads none of them."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentensemble.serve._hardened import Limits
    from agentensemble.serve.a2a_remote import A2AAgent
    from agentensemble.serve.a2a_serving import TaskLimits, a2a_app
    from agentensemble.serve.ag_ui import AGUIReviewHandler, AGUIRunLimits, ag_ui_app
    from agentensemble.serve.mcp_review import MCPReviewHandler
    from agentensemble.serve.mcp_serving import SessionLimits, mcp_http_app, mcp_server
    from agentensemble.serve.run_api_serving import RunAPIReviewHandler, RunLimits, run_api

_WHERE = {
    "mcp_server": ("agentensemble.serve.mcp_serving", "mcp"),
    "mcp_http_app": ("agentensemble.serve.mcp_serving", "mcp"),
    "SessionLimits": ("agentensemble.serve.mcp_serving", "mcp"),
    "TaskLimits": ("agentensemble.serve.a2a_serving", "a2a"),
    "Limits": ("agentensemble.serve._hardened", "mcp"),  # no extra needed: uvicorn is lazy
    "MCPReviewHandler": ("agentensemble.serve.mcp_review", "mcp"),
    "a2a_app": ("agentensemble.serve.a2a_serving", "a2a"),
    "A2AAgent": ("agentensemble.serve.a2a_remote", "a2a"),
    "run_api": ("agentensemble.serve.run_api_serving", "serve"),
    "RunLimits": ("agentensemble.serve._run_api_runs", "serve"),
    "RunAPIReviewHandler": ("agentensemble.serve._run_api_review", "serve"),
    "ag_ui_app": ("agentensemble.serve.ag_ui", "ag-ui"),
    "AGUIRunLimits": ("agentensemble.serve.ag_ui", "ag-ui"),
    "AGUIReviewHandler": ("agentensemble.serve._ag_ui_review", "ag-ui"),  # cheap: no ag_ui
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'agentensemble.serve' has no attribute {name!r}")
    module_name, extra = _WHERE[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ImportError(
            f"agentensemble.serve.{name} needs the {extra} extra: "
            f"pip install 'agentensemble-py[{extra}]' ({error})"
        ) from error
    return getattr(module, name)


__all__ = [
    "A2AAgent",
    "AGUIReviewHandler",
    "AGUIRunLimits",
    "Limits",
    "MCPReviewHandler",
    "RunAPIReviewHandler",
    "RunLimits",
    "SessionLimits",
    "TaskLimits",
    "a2a_app",
    "ag_ui_app",
    "mcp_http_app",
    "mcp_server",
    "run_api",
]
