"""The agentensemble web console (extra ``agentensemble-py[web]``): watch runs, decide reviews.

Start it with ``agentensemble serve`` (it prints a login address with a one-time token), then
connect an ensemble in one line::

    Ensemble(..., listeners=[WebConsole(url, token)],
             review_handler=WebReviewHandler(url, token))

The core never imports this package. See docs/web-console.md.
"""

from __future__ import annotations

from agentensemble_web.listener import WebConsole
from agentensemble_web.review_handler import WebReviewHandler
from agentensemble_web.server import WebConsoleServer
from agentensemble_web.wire import event_to_json

__all__ = ["WebConsole", "WebConsoleServer", "WebReviewHandler", "event_to_json"]
