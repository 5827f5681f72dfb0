"""File-descriptor checks shared by the pool's and the loop inbox's tests."""

from __future__ import annotations

import os


def is_open(fd: int) -> bool:
    """Whether ``fd`` is an open descriptor of this process."""
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True
