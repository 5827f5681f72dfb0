"""One batch of concurrent runs measured the same way by the concurrency benchmarks: wall and CPU
time, the peak memory from the batch's start (VmHWM reset to the RSS first), the CPU time spent
in the garbage collector and its collections, and optionally a cProfile of the batch. Used
inside each benchmark's child process, after its warm-up."""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def memory() -> tuple[int, int]:
    """(VmRSS, VmHWM) of this process in bytes."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) * 1024
    return fields["VmRSS"], fields["VmHWM"]


class Collections:
    """A ``gc.callbacks`` entry: the CPU seconds spent in the garbage collector and how many
    collections of each generation ran (young, middle, full)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.counts = [0, 0, 0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.seconds += time.process_time() - self._started
            self.counts[info["generation"]] += 1


async def measured(
    batch: Callable[[], Awaitable[T]], runs: int, profile: str | None, *orders: tuple[str, int]
) -> tuple[T, dict[str, Any]]:
    """``batch()``'s result and its figures per run; with ``profile``, a cProfile written there
    (each of ``orders``: a sort key and how many lines of it)."""
    with contextlib.suppress(OSError):  # the peak from here on ("5": VmHWM reset to the RSS)
        Path("/proc/self/clear_refs").write_text("5")
    before, _ = memory()
    collector = Collections()
    gc.callbacks.append(collector)
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    cpu, wall = time.process_time(), time.perf_counter()
    result = await batch()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    gc.callbacks.remove(collector)
    if profiler is not None:
        import io
        import pstats

        profiler.disable()
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        for key, lines in orders or (("tottime", 45),):
            stats.sort_stats(key).print_stats(lines)
        Path(profile).write_text(text.getvalue())
    _, peak = memory()
    figures = {
        "runs": runs,
        "wall": wall,
        "cpu_per_run_ms": 1000 * cpu / runs,
        "runs_per_s": runs / wall,
        "peak_mib": peak / 2**20,
        "growth_per_run_kib": max(peak - before, 0) / runs / 1024,
        "gc_per_run_ms": 1000 * collector.seconds / runs,
        "collections": collector.counts,
    }
    return result, figures
