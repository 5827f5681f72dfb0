"""``python -m agentensemble``: the same as the ``agentensemble`` command."""

import sys

from agentensemble.cli import main

sys.exit(main())
