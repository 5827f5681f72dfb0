"""The examples' model switch: a real provider when the environment names one, else offline."""

from __future__ import annotations

import os

from agentensemble import ChatModel

OFFLINE_BANNER = "Offline demo: no API key found, using a scripted model (set OPENAI_API_KEY)."


def choose_model(offline: ChatModel) -> tuple[str | ChatModel, str]:
    """``AGENTENSEMBLE_MODEL`` (any litellm model), else ``openai/gpt-4o-mini`` when
    ``OPENAI_API_KEY`` is set, else ``offline``; with a one-line banner that says which."""
    name = os.environ.get("AGENTENSEMBLE_MODEL")
    if name:
        return name, f"Using model {name}."
    if os.environ.get("OPENAI_API_KEY"):
        return "openai/gpt-4o-mini", "Using model openai/gpt-4o-mini (OPENAI_API_KEY is set)."
    return offline, OFFLINE_BANNER
