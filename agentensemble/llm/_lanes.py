"""Which way a model call goes: straight to an OpenAI-compatible endpoint, or through litellm.

The rule, one pure function (``choose_lane``), documented in docs/models.md:

- ``LLM(..., lane="litellm")`` or ``AGENTENSEMBLE_LLM_LANE=litellm`` in the environment: litellm.
- Otherwise the **openai lane** when the model is an OpenAI one (``openai/<name>``, or a bare
  ``gpt-*``/``chatgpt-*`` name), whatever ``api_base`` it points at (OpenAI itself, vLLM, Ollama,
  LM Studio, a gateway...), and every extra setting is one the OpenAI chat API takes (``seed``,
  ``top_p``, ``extra_headers``...). A litellm-only setting (``mock_response``, ``drop_params``,
  ``custom_llm_provider``...) sends the call through litellm, which knows what to do with it.
- **Azure OpenAI** (``azure/<deployment>``) takes the openai lane too when it authenticates with
  an API key (``api_key=``, ``AZURE_OPENAI_API_KEY`` or ``AZURE_API_KEY``) and its endpoint is
  known (``api_base`` or ``AZURE_API_BASE``); Entra ID tokens and the rest go through litellm.
- Names litellm rewrites requests for go through litellm, so the request stays the same: the
  reasoning models (``o1*``, ``o3*``, ``o4*``, ``gpt-5*``: ``max_tokens`` becomes
  ``max_completion_tokens``, some turn system messages into user ones) and ``*instruct*`` models
  (sent to the text-completions endpoint).
- Everything else: litellm.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Literal

from agentensemble.llm._config_checks import provider_of

Lane = Literal["openai", "litellm"]
LaneSetting = Literal["auto", "litellm"]

#: OpenAI model names whose requests litellm rewrites (see the module doc).
_REWRITTEN_BY_LITELLM = ("o1", "o3", "o4", "gpt-5")

#: The environment variable that forces litellm for every ``LLM`` left at ``lane="auto"``.
LANE_VARIABLE = "AGENTENSEMBLE_LLM_LANE"

#: Settings the OpenAI chat completions API takes in the request body.
OPENAI_BODY_SETTINGS = frozenset(
    {
        "audio",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "max_completion_tokens",
        "metadata",
        "modalities",
        "n",
        "parallel_tool_calls",
        "prediction",
        "presence_penalty",
        "prompt_cache_key",
        "reasoning_effort",
        "response_format",
        "safety_identifier",
        "seed",
        "service_tier",
        "stop",
        "store",
        "tool_choice",
        "top_logprobs",
        "top_p",
        "user",
        "verbosity",
        "web_search_options",
    }
)
#: Settings the openai lane turns into headers, query parameters or body additions.
OPENAI_TRANSPORT_SETTINGS = frozenset(
    {"extra_headers", "extra_body", "extra_query", "organization", "api_key", "api_version"}
)
#: Where litellm finds an Azure key and endpoint in the environment, in its order.
AZURE_KEY_VARIABLES = ("AZURE_OPENAI_API_KEY", "AZURE_API_KEY")
AZURE_BASE_VARIABLE = "AZURE_API_BASE"


def lane_setting_from_environment(environ: Mapping[str, str] | None = None) -> LaneSetting:
    """``litellm`` when ``AGENTENSEMBLE_LLM_LANE`` says so (any case), else ``auto``."""
    value = (os.environ if environ is None else environ).get(LANE_VARIABLE, "")
    return "litellm" if value.strip().lower() == "litellm" else "auto"


def choose_lane(
    model: str,
    extra_settings: Iterable[str] = (),
    setting: LaneSetting = "auto",
    environ: Mapping[str, str] | None = None,
    *,
    has_key: bool = False,
    api_base: str | None = None,
) -> Lane:
    """The lane a call to ``model`` with these extra setting names takes (see the module doc);
    ``has_key``/``api_base``: whether ``LLM`` was given a key and a base URL (Azure needs both,
    here or in the environment)."""
    env = os.environ if environ is None else environ
    if setting == "litellm" or lane_setting_from_environment(env) == "litellm":
        return "litellm"
    provider = provider_of(model)
    if provider == "azure":
        keyed = has_key or any(env.get(name) for name in AZURE_KEY_VARIABLES)
        if not (keyed and (api_base or env.get(AZURE_BASE_VARIABLE))):
            return "litellm"
    elif provider != "openai":
        return "litellm"
    name = model.split("/", 1)[-1].lower()
    if name.startswith(_REWRITTEN_BY_LITELLM) or "instruct" in name:
        return "litellm"
    allowed = OPENAI_BODY_SETTINGS | OPENAI_TRANSPORT_SETTINGS
    if any(name not in allowed for name in extra_settings):
        return "litellm"
    return "openai"


__all__ = [
    "AZURE_BASE_VARIABLE",
    "AZURE_KEY_VARIABLES",
    "LANE_VARIABLE",
    "OPENAI_BODY_SETTINGS",
    "OPENAI_TRANSPORT_SETTINGS",
    "Lane",
    "LaneSetting",
    "choose_lane",
    "lane_setting_from_environment",
]
