"""Setups a docs code block can ask for with ``<!-- scaffold: NAME -->`` before its fence.

Each is Python source run in the block's namespace first. A reader pastes a block as it is, so a
block defines what it uses (or continues an earlier block of its page, ``<!-- continue -->``);
a scaffold is only for what a pasted block cannot do itself, such as running from the
repository's root.
"""

from __future__ import annotations

_IN_REPO = """
import os
from pathlib import Path

import agentensemble

os.chdir(Path(agentensemble.__file__).absolute().parent.parent)  # paths like examples/crew.yaml
"""

SCAFFOLDS: dict[str, str] = {
    "in-repo": _IN_REPO,  # run from the repository root (restored after the block)
}

__all__ = ["SCAFFOLDS"]
