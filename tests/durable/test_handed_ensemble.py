"""``run()`` builds the run's ensemble once: the factory call that checks it (before the run
starts) hands its ensemble to the run it starts in this process, instead of a second call.

Each run still gets an ensemble of its own (a factory is called for every run), a run resumed
by id or recorded already gets nothing handed that another run built, and a failing factory
still fails ``run()`` before any run is recorded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

APP = """
import json, sys
from agentensemble import Ensemble, Task
from agentensemble.durable import DurableRuntime

db = sys.argv[1]
built = []  # (name, id of the ensemble's state) per factory call
used = []  # (name, id of the state the run's handler saw) per run
kept = []  # every state stays alive: an id is never reused for a later one

def factory(name):
    def build():
        state = object()
        kept.append(state)
        built.append((name, id(state)))
        def handler(ctx, state=state):
            used.append((name, id(state)))
            return name + " done"
        return Ensemble(tasks=[Task(description="d", handler=handler)])
    return build

def broken():
    if built:  # the check at launch passes; runs fail to build
        raise RuntimeError("no ensemble today")
    built.append(("broken", 0))
    return Ensemble(tasks=[Task(description="d", handler=lambda ctx: "x")])

runtime = DurableRuntime(db)
runtime.register("one", factory("one"))
runtime.register("two", factory("two"))
runtime.launch()
runtime.register("broken", broken)
at_launch = len(built)
outputs = [runtime.run("one").raw, runtime.run("two").raw, runtime.run("one", run_id="r1").raw]
again = runtime.run("one", run_id="r1").raw  # recorded: its output, no execution
after_runs = len(built)
try:
    runtime.run("broken")
    failed = None
except RuntimeError as error:
    failed = str(error)
listed = [r.run_id for r in runtime.list_runs()]
runtime.shutdown()
print(json.dumps({"at_launch": at_launch, "after_runs": after_runs, "built": built,
                  "used": used, "outputs": outputs, "again": again, "failed": failed,
                  "runs": len(listed)}))
"""


def _run_app(tmp_path: Path, name: str, source: str) -> Any:
    """Run ``source`` as a script on a fresh SQLite database; the JSON its last line prints."""
    script = tmp_path / name
    script.write_text(source)
    done = subprocess.run(
        [sys.executable, str(script), f"sqlite:///{tmp_path}/runs.sqlite"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_run_uses_the_ensemble_its_check_built_and_each_run_gets_its_own(
    tmp_path: Path,
) -> None:
    found = _run_app(tmp_path, "app.py", APP)

    assert found["outputs"] == ["one done", "two done", "one done"]
    assert found["again"] == "one done"
    # launch checks each factory once; then one call per run() (four, the last one recorded)
    assert found["after_runs"] == found["at_launch"] + 4
    used = [tuple(pair) for pair in found["used"]]
    built = [tuple(pair) for pair in found["built"]]
    assert len(used) == 3  # the recorded run did not execute again
    assert len(set(used)) == 3  # every run had an ensemble of its own
    assert set(used) <= set(built)  # ... one its factory built, for its own name
    # the failing factory failed run() itself, before a run was recorded
    assert found["failed"] == "no ensemble today"
    assert found["runs"] == 3


SUBMIT_APP = """
import json, sys
from agentensemble import Ensemble, Task
from agentensemble.durable import DurableRuntime
from agentensemble.errors import ConfigurationError

db = sys.argv[1]
calls = {"one": 0, "later": 0}

def counted(name, fail=False):
    def build():
        calls[name] += 1
        if fail:
            raise RuntimeError("no ensemble today")
        return Ensemble(tasks=[Task(description="d", handler=lambda ctx: name + " done")])
    return build

runtime = DurableRuntime(db)
runtime.register("one", counted("one"))
runtime.launch()
at_launch = dict(calls)
ids = [runtime.submit("one") for _ in range(3)]
outputs = [runtime.result(run_id).raw for run_id in ids]
after_submits = dict(calls)
refused = []
try:
    runtime.submit("nobody")
except ConfigurationError as error:
    refused.append("nobody")
runtime.register("later", counted("later", fail=True))  # registered after launch: checked
try:
    runtime.submit("later")
except RuntimeError as error:
    refused.append(str(error))
runtime.register("later", counted("later"))  # replaced: checked again, then not
later = [runtime.submit("later"), runtime.submit("later")]
later_outputs = [runtime.result(run_id).raw for run_id in later]
runtime.shutdown()
print(json.dumps({"at_launch": at_launch, "after_submits": after_submits, "refused": refused,
                  "outputs": outputs, "later_outputs": later_outputs, "calls": calls,
                  "runs": len(ids) + len(later)}))
"""


def test_submit_checks_a_factory_once_and_each_queued_run_builds_its_own(tmp_path: Path) -> None:
    found = _run_app(tmp_path, "submit_app.py", SUBMIT_APP)

    assert found["at_launch"] == {"one": 1, "later": 0}
    assert found["outputs"] == ["one done"] * 3
    # no factory call per submit: launch's check, then one per run, by the worker running it
    assert found["after_submits"]["one"] == 1 + 3
    # an unknown name, and a factory that has never built here, are still refused at submit
    assert found["refused"] == ["nobody", "no ensemble today"]
    # a factory registered in its place is checked once (its first build), then each run's
    assert found["later_outputs"] == ["later done"] * 2
    assert found["calls"]["later"] == 1 + 1 + 2
