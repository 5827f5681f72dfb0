"""Settings that cannot work, found before the first request: a missing API key, a bad api_base.

The rule (documented in docs/models.md):

- ``api_base`` must be an ``http://`` or ``https://`` URL with a host; checked when an ``LLM``
  is built. For the openai provider, ``OPENAI_BASE_URL`` / ``OPENAI_API_BASE`` from the
  environment are checked the same way when the model is prepared.
- For the providers in ``KEY_VARIABLES``, a key is needed: ``api_key=``, an ``api_key`` in the
  extra settings, or one of the environment variables listed for it. A local server behind the
  ``openai/`` prefix needs one too (the openai SDK refuses to send without one): any value will do.
- For other providers, when litellm is already loaded, its ``validate_environment`` is asked, and
  only missing ``*_API_KEY`` variables count (it also lists optional settings). Without litellm
  loaded they are not checked here; the first call then fails, at once and without retries.

Each check names the environment variable or setting, so the fix is in the message. Keys found in
the environment for the chosen provider are registered as secrets by value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from difflib import get_close_matches
from typing import Any
from urllib.parse import urlsplit

from agentensemble.errors import ModelSettingsError
from agentensemble.llm._litellm import is_loaded, load_litellm
from agentensemble.llm.cost import price_table
from agentensemble.redaction import register_secret

#: Provider → environment variables any one of which holds its key (litellm reads these).
KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY", "OR_API_KEY"),
    "xai": ("XAI_API_KEY",),
    "cohere": ("COHERE_API_KEY", "CO_API_KEY"),
    "together_ai": (
        "TOGETHERAI_API_KEY",
        "TOGETHER_API_KEY",
        "TOGETHER_AI_API_KEY",
        "TOGETHER_AI_TOKEN",
    ),
    "fireworks_ai": (
        "FIREWORKS_AI_API_KEY",
        "FIREWORKS_API_KEY",
        "FIREWORKSAI_API_KEY",
        "FIREWORKS_AI_TOKEN",
    ),
    "perplexity": ("PERPLEXITYAI_API_KEY", "PERPLEXITY_API_KEY"),
    "cerebras": ("CEREBRAS_API_KEY",),
}
#: Keys registered as secrets when present, but not demanded: Azure has several other ways in.
OPTIONAL_KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "azure": ("AZURE_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_AD_TOKEN"),
}
#: Environment variables the openai provider reads for its base URL when api_base is not set.
BASE_URL_VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_BASE")
#: Bare model names litellm maps to a provider without a prefix.
_BARE_PREFIXES = (
    ("gpt-", "openai"),
    ("chatgpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("claude-", "anthropic"),
)
_KEY_SETTINGS = ("api_key", "azure_ad_token", "azure_ad_token_provider")


def provider_of(model: str) -> str | None:
    """The provider a litellm model string names: ``openai/x`` → openai, ``gpt-4o`` → openai."""
    if "/" in model:
        return model.split("/", 1)[0].lower()
    for prefix, provider in _BARE_PREFIXES:
        if model.startswith(prefix):
            return provider
    return None


def api_base_problem(value: str, setting: str = "api_base") -> str | None:
    """Why ``value`` cannot be used as a base URL, naming ``setting``; None when it can."""
    parts = urlsplit(value.strip())
    if parts.scheme in ("http", "https") and parts.netloc:
        return None
    if "://" not in value:
        return (
            f"{setting}={value!r} has no scheme; write it as a full URL such as "
            f"'http://{value.strip().lstrip('/')}'"
        )
    return f"{setting}={value!r} is not an http:// or https:// URL with a host"


def key_variables(provider: str | None) -> tuple[str, ...]:
    """The environment variables that may hold ``provider``'s key (demanded or not)."""
    if provider is None:
        return ()
    return KEY_VARIABLES.get(provider, ()) or OPTIONAL_KEY_VARIABLES.get(provider, ())


def _litellm_missing_keys(model: str, api_base: str | None) -> list[str]:
    """Missing ``*_API_KEY`` variables by litellm's own check, only if litellm is loaded."""
    if not is_loaded():
        return []
    litellm = load_litellm()
    if getattr(litellm, "api_key", None):
        return []
    try:
        verdict = litellm.validate_environment(model=model, api_base=api_base)
    except Exception:  # an unknown provider: litellm's call will say so itself
        return []
    if not isinstance(verdict, dict) or verdict.get("keys_in_environment"):
        return []
    missing = [str(name) for name in verdict.get("missing_keys") or []]
    return [name for name in missing if name.endswith("_API_KEY")]


def missing_key_problem(
    model: str,
    *,
    has_key: bool,
    extra: Mapping[str, Any],
    api_base: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> str | None:
    """Why a call to ``model`` would fail for want of a key, naming the variable; None if not."""
    if has_key or any(extra.get(name) for name in _KEY_SETTINGS):
        return None
    env = os.environ if environ is None else environ
    provider = provider_of(model)
    variables = KEY_VARIABLES.get(provider or "", ())
    if not variables:
        variables = tuple(_litellm_missing_keys(model, api_base)) if environ is None else ()
    if not variables or any(env.get(name) for name in variables):
        return None
    names = " or ".join(variables)
    hint = " (a local server that ignores keys still needs one: any value will do)"
    return (
        f"model {model!r} needs an API key: set {names} in the environment or pass "
        f"LLM({model!r}, api_key=...)"
        + (hint if provider == "openai" and api_base else "")
        + OFFLINE_ADVICE
    )


#: The offline way for a script without a key (the command line says ``--model scripted``).
OFFLINE_ADVICE = "; to try it offline, use agentensemble.testing.ScriptedChatModel as the llm"


def base_url_problem(model: str, environ: Mapping[str, str] | None = None) -> str | None:
    """A base URL taken from the environment (openai provider) that cannot be used."""
    if provider_of(model) != "openai":
        return None
    env = os.environ if environ is None else environ
    for name in BASE_URL_VARIABLES:
        value = env.get(name)
        if value:
            return api_base_problem(value, setting=f"environment variable {name}")
    return None


def register_environment_keys(model: str, environ: Mapping[str, str] | None = None) -> None:
    """Register by value the keys the environment holds for ``model``'s provider."""
    env = os.environ if environ is None else environ
    for name in key_variables(provider_of(model)):
        register_secret(env.get(name))


def model_name_problem(model: str, extra: Mapping[str, Any]) -> str | None:
    """A name with no ``provider/`` that litellm's model table does not know either (``gpt4o``,
    ``claude-3``): litellm would refuse it seconds into the run. Suggests close spellings."""
    if "/" in model or extra.get("custom_llm_provider"):
        return None
    table = price_table()
    if isinstance(table.get(model), Mapping):
        return None
    known = {
        name: str(entry.get("litellm_provider"))
        for name, entry in table.items()
        if isinstance(name, str)
        and "/" not in name
        and isinstance(entry, Mapping)
        and entry.get("mode") in (None, "chat", "responses")
        and entry.get("litellm_provider")
    }
    squashed = _squash(model)
    close = sorted((n for n in known if _squash(n).startswith(squashed)), key=len)[:3]
    close += [n for n in get_close_matches(model, list(known), n=3, cutoff=0.6) if n not in close]
    provider = provider_of(model)
    suggestions = [f"'{known[name]}/{name}'" for name in close[:3]]
    if not suggestions and provider:
        suggestions = [f"'{provider}/{model}'"]
    advice = f"; did you mean {' or '.join(suggestions)}?" if suggestions else ""
    return (
        f"model {model!r} names no provider, and litellm's model table has no model of that "
        f"name: write it as 'provider/model', such as 'openai/gpt-4o-mini' or "
        f"'anthropic/claude-3-5-sonnet-latest'{advice}"
    )


def provider_problem(model: str, extra: Mapping[str, Any]) -> str | None:
    """A ``provider/model`` name whose provider litellm does not know (``acme/some-model``):
    litellm would refuse it only at the first request. The price table answers for the common
    providers; litellm's own provider list (loaded only for a name the table does not know)
    for the rest. Suggests close spellings."""
    if "/" not in model or extra.get("custom_llm_provider"):
        return None
    provider = model.split("/", 1)[0].lower()
    table_providers = {
        str(entry.get("litellm_provider"))
        for entry in price_table().values()
        if isinstance(entry, Mapping) and entry.get("litellm_provider")
    }
    if provider in table_providers or provider in KEY_VARIABLES:
        return None
    known = table_providers | set(KEY_VARIABLES) | _litellm_providers()
    if provider in known:
        return None
    close = get_close_matches(provider, sorted(known), n=3, cutoff=0.8)
    advice = f"; did you mean {' or '.join(repr(n) for n in close)}?" if close else ""
    return (
        f"model {model!r} names the provider {provider!r}, which litellm does not know: write it "
        f"as 'provider/model' with a provider litellm supports, such as 'openai/gpt-4o-mini', or "
        f"'openai/<model>' with api_base=... for an OpenAI-compatible server{advice}"
    )


def _litellm_providers() -> set[str]:
    providers = getattr(load_litellm(), "provider_list", ())
    return {str(getattr(p, "value", p)) for p in providers}


def _squash(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def check_model_settings(
    model: str, *, has_key: bool, extra: Mapping[str, Any], api_base: str | None
) -> None:
    """Raise ``ModelSettingsError`` for settings that cannot work; register environment keys."""
    register_environment_keys(model)
    problem = (
        model_name_problem(model, extra)
        or provider_problem(model, extra)
        or (api_base_problem(api_base) if api_base is not None else base_url_problem(model))
    )
    if problem:
        raise ModelSettingsError(problem)
    problem = missing_key_problem(model, has_key=has_key, extra=extra, api_base=api_base)
    if problem:
        raise ModelSettingsError(problem, missing_key=True)


__all__ = [
    "BASE_URL_VARIABLES",
    "KEY_VARIABLES",
    "OFFLINE_ADVICE",
    "api_base_problem",
    "base_url_problem",
    "check_model_settings",
    "key_variables",
    "missing_key_problem",
    "model_name_problem",
    "provider_of",
    "provider_problem",
    "register_environment_keys",
]
