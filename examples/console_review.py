r"""Human review on the terminal: approve a tool call, then review the agent's report.

Run it with ``python examples/console_review.py`` and answer at the prompts:

- the agent wants to delete old log files (simulated: nothing on your disk is touched), and the
  ``delete_files`` tool requires approval: ``c`` (or Enter) approves, ``e`` then new JSON
  arguments edits the call (e.g. ``e {"pattern": "*.log.2"}``), ``x`` rejects it and the agent
  adapts;
- then the task's report is reviewed: ``c`` accepts it, ``e`` then your text replaces it, ``x``
  stops the run (the report is kept).

Non-interactively, feed the answers on stdin (one per line)::

    echo -e "c\nc" | python examples/console_review.py

End of input, if the answers run out, counts as "no answer": the tool call is rejected and the
report review stops the run; it is never taken as approval.

With no API key it runs offline on a scripted model (and says so); with ``OPENAI_API_KEY`` set
it uses ``openai/gpt-4o-mini``, and ``AGENTENSEMBLE_MODEL`` names any litellm model. See
docs/review.md.
"""

from __future__ import annotations

from datetime import timedelta

from _janitor import cleanup_task, offline_model, print_outcome
from _model_choice import choose_model

from agentensemble import ChatModel, Ensemble
from agentensemble_review import ConsoleReviewHandler


def build(model: str | ChatModel) -> Ensemble:
    cleanup = cleanup_task(model, review_timeout=timedelta(minutes=10))
    return Ensemble(tasks=[cleanup], review_handler=ConsoleReviewHandler())


def main() -> int:
    model, banner = choose_model(offline_model())
    print(banner, flush=True)
    result = build(model).run()
    print_outcome(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
