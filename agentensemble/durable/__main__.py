"""``python -m agentensemble.durable``: the same commands as ``agentensemble durable``
(see ``agentensemble/cli/durable_command.py``)."""

from __future__ import annotations

import sys

from agentensemble.cli.durable_command import main

if __name__ == "__main__":
    sys.exit(main())
