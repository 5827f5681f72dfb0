"""Where the browser tests find Chromium, and the one line that says why they are skipped.

``make browser`` installs Debian's ``chromium`` + ``chromedriver`` where it can (root with
apt-get); anywhere else the browser tests are skipped with a line saying how to run them.
``AGENTENSEMBLE_CHROMIUM`` / ``AGENTENSEMBLE_CHROMEDRIVER`` point at other binaries (macOS, a
distribution that names them differently); CI sets ``AGENTENSEMBLE_REQUIRE_BROWSER=1`` so a missing
browser fails the run instead of skipping the suite without anybody noticing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DEFAULT_CHROMIUM = "/usr/bin/chromium"
DEFAULT_CHROMEDRIVER = "/usr/bin/chromedriver"
HOW_TO_RUN = (
    "install them with `sudo make browser` (Debian/Ubuntu) or point AGENTENSEMBLE_CHROMIUM and "
    "AGENTENSEMBLE_CHROMEDRIVER at your own, then run `make test`"
)


class BrowserRequiredError(RuntimeError):
    """The browser suite must run here (CI) but its browser is missing."""


def find_browser(env: Mapping[str, str] = os.environ) -> tuple[str, str] | str:
    """The (chromium, chromedriver) paths to use, or the reason the browser tests are skipped."""
    chromium = env.get("AGENTENSEMBLE_CHROMIUM") or DEFAULT_CHROMIUM
    chromedriver = env.get("AGENTENSEMBLE_CHROMEDRIVER") or DEFAULT_CHROMEDRIVER
    missing = [path for path in (chromium, chromedriver) if not _executable(path)]
    if not missing:
        return chromium, chromedriver
    reason = f"browser tests skipped: {' and '.join(missing)} not found; {HOW_TO_RUN}"
    if env.get("AGENTENSEMBLE_REQUIRE_BROWSER") == "1":
        raise BrowserRequiredError(
            reason.replace("skipped", "required (AGENTENSEMBLE_REQUIRE_BROWSER=1)")
        )
    return reason


def _executable(path: str) -> bool:
    candidate = Path(path)
    return candidate.is_file() and os.access(candidate, os.X_OK)
