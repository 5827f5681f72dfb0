"""Small text helpers shared by the handlers: durations for humans."""

from __future__ import annotations


def format_duration(seconds: float) -> str:
    """``0.5s``, ``45s``, ``5m``, ``2m 30s``, ``1h 5m`` — short, for banners and reasons."""
    if seconds < 10 and seconds != int(seconds):
        return f"{seconds:.1f}s".replace(".0s", "s")
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = []
    if hours:
        parts.append(f"{hours}h")
    if minutes:
        parts.append(f"{minutes}m")
    if secs or not parts:
        parts.append(f"{secs}s")
    return " ".join(parts)


def clock(seconds: float) -> str:
    """``m:ss`` (or ``h:mm:ss``) for a live countdown."""
    total = max(0, int(seconds + 0.999))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
