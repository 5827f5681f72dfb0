"""Each server the package runs has a default port of its own, so a user can start any two of
them with their defaults side by side (serve-api and serve-ag-ui once shared 8769: the second
failed with "address already in use")."""

from __future__ import annotations

import importlib

import pytest

# server -> (module, its default port's name)
SERVERS = {
    "review server": ("agentensemble_review.server", None),
    "web console": ("agentensemble_web.server", "DEFAULT_PORT"),
    "serve-mcp": ("agentensemble.cli.serve_mcp_command", "DEFAULT_PORT"),
    "serve-a2a": ("agentensemble.cli.serve_a2a_command", "DEFAULT_PORT"),
    "serve-api": ("agentensemble.cli.serve_api_command", "DEFAULT_PORT"),
    "serve-ag-ui": ("agentensemble.cli.serve_ag_ui_command", "DEFAULT_PORT"),
}


def default_port(server: str) -> int:
    module_name, attribute = SERVERS[server]
    module = importlib.import_module(module_name)
    if attribute is None:  # the review server's default is its constructor's
        import inspect

        return int(inspect.signature(module.ReviewServer).parameters["port"].default)
    return int(getattr(module, attribute))


def test_no_two_servers_share_a_default_port() -> None:
    pytest.importorskip("uvicorn")
    ports = {server: default_port(server) for server in SERVERS}
    assert len(set(ports.values())) == len(ports), ports


def test_the_ag_ui_endpoint_has_its_own_port() -> None:
    assert default_port("serve-ag-ui") == 8770
