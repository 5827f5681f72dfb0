"""HttpFetch's HTML converter: the one bounded converter of ``agentensemble._base.html`` (read
through ``agentensemble.untrusted``), named here where the fetch tool and its tests import it."""

from __future__ import annotations

from agentensemble._base.html import ConversionTimeout, html_to_text

__all__ = ["ConversionTimeout", "html_to_text"]
