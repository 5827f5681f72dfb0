"""Helpers shared by the review tests (a plain module: the tests directory is no package)."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import agentensemble_review

# The checkout whose package this process imported: child Pythons must import the same one.
REPO_ROOT = Path(agentensemble_review.__file__).absolute().parent.parent
PYTHON = sys.executable


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def subprocess_env() -> dict[str, str]:
    """The environment for child Pythons: this checkout first on the import path."""
    env = dict(os.environ)
    paths = [str(REPO_ROOT), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env
