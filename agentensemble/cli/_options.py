"""argparse types for numbers given on the command line, bounded on both sides.

A number option without an upper bound reached a driver or an allocation as it was typed:
``serve --port 99999`` was a traceback from ``bind``, ``memory list --last 99999999999999999999``
an ``OverflowError`` from SQLite, ``eval --repeat 999999999999`` a ``MemoryError``;
``serve --keep-days nan`` was taken. Each type here refuses such a value in argparse's own way
(usage, then ``argument --port: ...``, exit 2), naming the option and the range. Stdlib only, so
the review server's command line uses it too.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

MAX_COUNT = 1_000_000_000
"""The largest count a command takes (runs kept, entries listed): far above any real use,
far below what SQLite's 64-bit integers or a list can hold."""


def whole_number(option: str, low: int | None, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` (None: any below ``high``, the command
    says what is wrong with it) to ``high``, or an error naming ``option``."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{option} takes a whole number, not {text[:40]!r}"
            ) from None
        if (low is not None and value < low) or value > high:
            shown = f"from {low} to {high}" if low is not None else f"at most {high}"
            raise argparse.ArgumentTypeError(f"{option} must be {shown}, not {text[:40]}")
        return value

    return parse


def port_number(option: str = "--port") -> Callable[[str], int]:
    """An argparse type: a TCP port, 0 (any free one) to 65535."""
    return whole_number(option, 0, 65535)


def finite_number(
    option: str, high: float, kind: type[float] | type[int] = float
) -> Callable[[str], float]:
    """An argparse type: a number (of ``kind``) more than 0 and at most ``high`` (never nan or
    infinity)."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{option} takes a number, not {text[:40]!r}"
            ) from None
        if not math.isfinite(value) or not 0 < value <= high:
            raise argparse.ArgumentTypeError(
                f"{option} must be more than 0 and at most {high:g}, not {text[:40]}"
            )
        return value

    return parse


__all__ = ["MAX_COUNT", "finite_number", "port_number", "whole_number"]
