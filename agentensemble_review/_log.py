"""The package's logger: structlog over the stdlib logger ``agentensemble.review``.

A child of the core's ``agentensemble`` logger, so it is silent until the application (or
``agentensemble.configure_logging``) sets logging up, and shares the core's handlers when it does.
Nothing secret (webhook secret, Authorization header, signature) is ever passed to it.
"""

from __future__ import annotations

import logging
from typing import Any

import structlog

LOGGER_NAME = "agentensemble.review"

logging.getLogger(LOGGER_NAME).addHandler(logging.NullHandler())


def get_logger() -> Any:
    """A structlog logger (``.info(event, **fields)``) for this package."""
    return structlog.wrap_logger(
        logging.getLogger(LOGGER_NAME),
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.stdlib.add_log_level,
            structlog.stdlib.render_to_log_kwargs,
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
    )
