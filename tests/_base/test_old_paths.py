"""Pickles written before the private helpers moved into ``agentensemble/_base/`` still load.

``run_output_before_base.pickle`` was written by the package as it was before the move (commit
f968056): a one-tool run's ``EnsembleOutput`` (its trace a deferred value, pickled by way of
``agentensemble._deferred``), its ``TaskOutput``, and the two carrier exceptions of
``agentensemble._interrupts`` that a DBOS checkpoint can hold. It names the old paths.
"""

from __future__ import annotations

import importlib
import pickle
import pickletools
import subprocess
import sys
from pathlib import Path

import pytest

from agentensemble import EnsembleOutput, TaskOutput
from agentensemble._base.interrupts import EscapedError, Interrupted
from agentensemble._base.old_paths import MOVED, OldPathFinder, keep_old_paths

OLD_PICKLE = Path(__file__).with_name("run_output_before_base.pickle")


def _names_in(data: bytes) -> set[str]:
    return {arg for _, arg, _ in pickletools.genops(data) if isinstance(arg, str)}


def test_the_recorded_pickle_names_the_old_paths() -> None:
    names = _names_in(OLD_PICKLE.read_bytes())
    assert {"agentensemble._deferred", "agentensemble._interrupts"} <= names


def test_a_run_output_pickled_before_the_move_loads_whole() -> None:
    loaded = pickle.loads(OLD_PICKLE.read_bytes())

    output = loaded["output"]
    assert isinstance(output, EnsembleOutput)
    assert output.raw == "done"
    assert output.trace is not None and output.trace.tasks  # the deferred trace came back whole
    assert isinstance(loaded["task_output"], TaskOutput)
    assert loaded["task_output"].raw == "done"
    assert isinstance(loaded["escaped"], EscapedError)
    assert isinstance(loaded["interrupted"], Interrupted)


def test_it_loads_in_a_fresh_process_that_imported_nothing_first() -> None:
    """What a worker resuming a checkpoint does: unpickle before any of the package is imported."""
    code = (
        "import pickle, sys\n"
        f"loaded = pickle.loads(open({str(OLD_PICKLE)!r}, 'rb').read())\n"
        "print(loaded['output'].raw, type(loaded['escaped']).__module__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["done", "agentensemble._base.interrupts"]


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_each_old_path_is_the_module_at_its_new_path(old: str, new: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(new)


def test_the_finder_answers_for_moved_paths_only() -> None:
    finder = OldPathFinder()
    assert finder.find_spec("agentensemble._deferred") is not None
    for name in ("agentensemble.outputs", "agentensemble._nothing", "_deferred", "json"):
        assert finder.find_spec(name) is None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("agentensemble._no_such_helper")


def test_installing_it_again_adds_no_second_finder() -> None:
    keep_old_paths()  # the package's __init__ has called it already
    keep_old_paths()
    assert sum(isinstance(finder, OldPathFinder) for finder in sys.meta_path) == 1


def test_new_pickles_name_the_new_paths() -> None:
    names = _names_in(pickle.dumps(EscapedError(SystemExit(3))))
    assert "agentensemble._base.interrupts" in names
    assert not any(name in MOVED for name in names)
