"""Run by test_run_api_durable.py in a fresh process (DBOS is process-global): the run API over a
DurableRuntime on SQLite in FOLDER, served on 127.0.0.1 until the process is killed. Prints
``PORT <n>`` once it accepts connections."""

from __future__ import annotations

import socket
import sys
import threading
import time

from agentensemble import Agent, Ensemble, Task
from agentensemble.durable import DurableReviewHandler, DurableRuntime
from agentensemble.serve import run_api
from agentensemble.serve._hardened import hardened_server
from agentensemble.testing import FunctionChatModel

TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab"}


def reviewed() -> Ensemble:
    agent = Agent(
        role="Writer", goal="Explain {topic}", llm=FunctionChatModel(lambda m, t: "durable draft")
    )
    return Ensemble(
        tasks=[Task(description="Explain {topic}.", agent=agent)],
        review_handler=DurableReviewHandler(),
        review_policy="after_last_task",
    )


def plain() -> Ensemble:
    agent = Agent(
        role="Writer", goal="Explain {topic}", llm=FunctionChatModel(lambda m, t: "durable answer")
    )
    return Ensemble(tasks=[Task(description="Explain {topic}.", agent=agent)])


def main() -> None:
    builders = {"reviewed": reviewed, "plain": plain}
    runtime = DurableRuntime(f"sqlite:///{sys.argv[1]}/runs.sqlite")
    for name, build in builders.items():
        runtime.register(name, build)
    runtime.launch()
    app = run_api(builders, token=TOKENS, durable=runtime)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    server = hardened_server(app, log_level="critical", lifespan="on")
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    if not server.started:
        raise SystemExit("the run API did not start")
    print("PORT", listener.getsockname()[1], flush=True)
    thread.join()  # until killed


if __name__ == "__main__":
    main()
