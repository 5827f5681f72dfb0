"""Run by test_ag_ui_durable.py in a fresh process (DBOS is process-global): an ensemble served
as an AG-UI agent whose runs are durable runs of a DurableRuntime on SQLite. Prints what the
test checks."""

from __future__ import annotations

import json
import sys

from _durable_app_common import answering, launched_runtime
from ag_ui_helpers import post, run_input, served, user

from agentensemble import Ensemble
from agentensemble.errors import ConfigurationError
from agentensemble.serve import AGUIReviewHandler, ag_ui_app


def build() -> Ensemble:
    return answering("durable ag-ui answer")


def reviewed() -> Ensemble:
    ensemble = build()
    return Ensemble(tasks=ensemble.tasks, review_handler=AGUIReviewHandler())


def main() -> None:
    runtime = launched_runtime(sys.argv[1], {"explainer": build})
    try:
        for name, source in (("unregistered", build), ("explainer", reviewed)):
            try:
                ag_ui_app(source, durable=runtime, name=name)
            except ConfigurationError as error:
                print("REFUSED", error)
        with served(build, durable=runtime, name="explainer") as url:
            answer = post(url, run_input(messages=[user("tides")]))
        print("TYPES", json.dumps(answer.types))
        print("RESULT", answer.last.result)
        print("STATE", answer.state["status"], answer.state["tasksDone"])
        print("RUNS", [(run.ensemble, run.status) for run in runtime.list_runs()])
    finally:
        runtime.shutdown()


if __name__ == "__main__":
    main()
