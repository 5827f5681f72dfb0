"""Durable runs on DBOS (extra ``agentensemble-py[durable]``): survive a crash without paying twice.

```python
from agentensemble.durable import DurableRuntime

runtime = DurableRuntime()             # SQLite agentensemble.sqlite or $AGENTENSEMBLE_DATABASE_URL
runtime.register("research", build_research_ensemble)
runtime.launch()                       # also resumes runs a crash interrupted
output = runtime.run("research", {"topic": "AI"}, run_id="research-42")
```
See docs/durable.md.
"""

from __future__ import annotations

try:
    import dbos  # noqa: F401
except ImportError as error:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        'agentensemble.durable needs the durable extra: pip install "agentensemble-py[durable]"'
    ) from error

from agentensemble.durable._client import DurableClient, ReviewClosedError
from agentensemble.durable._kept import MissingAttachmentError
from agentensemble.durable._retention import Retention
from agentensemble.durable._review import DurableReviewHandler
from agentensemble.durable._runtime import (
    DATABASE_ENV,
    DEFAULT_DATABASE_URL,
    WORKER_ENV,
    DurableRunError,
    DurableRuntime,
    RunInfo,
    database_url,
)
from agentensemble.durable._steps import DurableDivergenceError

__all__ = [
    "DATABASE_ENV",
    "DEFAULT_DATABASE_URL",
    "WORKER_ENV",
    "DurableClient",
    "DurableDivergenceError",
    "DurableReviewHandler",
    "DurableRunError",
    "DurableRuntime",
    "MissingAttachmentError",
    "Retention",
    "ReviewClosedError",
    "RunInfo",
    "database_url",
]
