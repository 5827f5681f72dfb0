"""The trace recorder's own share of a 1-tool scripted run, replayed without the run around it.

One real run (``runtime_bench._one_tool_ensemble``) is recorded once: its events and the output
the recorder completes. Then, per sample, a fresh ``TraceRecorder`` hears the same events and
completes the same output, 2,000 times; CPU (``time.process_time``) and wall per replay, medians
of 9 samples with min-max. The parts (events alone, ``complete`` alone) are timed the same way.

    PYTHONPATH=$PWD python benchmarks/recorder_replay.py [--capture standard|off|full]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from runtime_bench import _one_tool_ensemble


def _recorded(capture: str) -> tuple[list[Any], Any, str, dict[str, Any]]:
    import agentensemble.tracing.recorder as recorder_module

    seen: dict[str, Any] = {}
    original = recorder_module.TraceRecorder

    class Spy(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            seen["events"] = []
            seen["run_id"] = self.run_id

        def on_event(self, event: Any) -> None:
            seen["events"].append(event)
            super().on_event(event)

        def complete(self, output: Any, **fields: Any) -> Any:
            seen["output"] = output
            seen["fields"] = fields
            return super().complete(output, **fields)

    recorder_module.TraceRecorder = Spy  # type: ignore[misc]
    try:
        ensemble = _one_tool_ensemble()
        ensemble.capture = capture
        ensemble.run()
    finally:
        recorder_module.TraceRecorder = original  # type: ignore[misc]
    return seen["events"], seen["output"], seen["run_id"], seen["fields"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--capture", default="standard")
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    from agentensemble.tracing.recorder import TraceRecorder

    events, output, run_id, fields = _recorded(args.capture)
    kept = [e for e in events if type(e).__name__ != "EnsembleCompleted"]

    def whole() -> None:
        recorder = TraceRecorder(run_id, capture=args.capture, inputs={})
        for event in kept:
            recorder.on_event(event)
        recorder.complete(output, **fields)

    def events_only() -> None:
        recorder = TraceRecorder(run_id, capture=args.capture, inputs={})
        for event in kept:
            recorder.on_event(event)

    parts = {"whole": whole, "events only": events_only}
    results: dict[str, list[float]] = {name: [] for name in parts}
    for _ in range(200):
        whole()
    for _ in range(9):
        for name, part in parts.items():
            started = time.process_time()
            for _ in range(args.runs):
                part()
            results[name].append((time.process_time() - started) / args.runs * 1e6)
    print(f"{len(kept)} events, capture={args.capture}; CPU per replay, median (min-max):")
    for name, values in results.items():
        low, high = min(values), max(values)
        print(f"  {name:12} {statistics.median(values):6.1f} us ({low:.1f}-{high:.1f})")
    print("  load average:", Path("/proc/loadavg").read_text().split()[:3])


if __name__ == "__main__":
    main()
