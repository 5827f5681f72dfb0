"""The one place litellm is imported: lazily, once, thread-safely, and tamed.

``import litellm`` costs seconds and, left alone, fetches a price map from the network, prints a
help banner on errors, attaches console handlers to its loggers and forces the ``httpx`` logger
to WARNING. We import it on the first real model call and undo all of that, so the library makes
no network traffic and prints nothing the user did not ask for.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any

from agentensemble.errors import ConfigurationError

_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")

_lock = threading.Lock()
_litellm: Any = None


def is_loaded() -> bool:
    """Whether our tamed litellm is ready (without importing it)."""
    return _litellm is not None


def load_litellm() -> Any:
    """Import and tame litellm on first use; later calls return the same module at once."""
    module = _litellm
    if module is not None:
        return module
    return _load_locked()


def _load_locked() -> Any:
    global _litellm
    with _lock:
        if _litellm is None:
            _litellm = _import_and_tame()
        return _litellm


#: litellm's capability check for each kind of part a model must take (``_messages.input_kinds``).
_INPUT_CHECKS = {
    "image": "supports_vision",
    "pdf": "supports_pdf_input",
    "audio": "supports_audio_input",
}


def takes_input(model: str, kind: str) -> bool:
    """Whether litellm's model table says ``model`` takes ``kind`` parts (``image``, ``pdf``,
    ``audio``). A model the table does not know (a local server's, a new one) is let through:
    the server decides. Imports litellm (call it off the event loop the first time)."""
    litellm = load_litellm()
    try:
        litellm.get_model_info(model=model)
    except Exception:  # not in the table: nothing to say against it
        return True
    try:
        return bool(getattr(litellm, _INPUT_CHECKS[kind])(model=model))
    except Exception:
        return True


def _import_and_tame() -> Any:
    already_imported = "litellm" in sys.modules
    # No phoning home for the model price map; a user's own setting wins.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    httpx_logger = logging.getLogger("httpx")
    httpx_level = httpx_logger.level

    import litellm

    httpx_logger.setLevel(httpx_level)  # litellm forces WARNING at import; give it back
    litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banner on errors
    if hasattr(litellm, "telemetry"):  # gone in recent releases; off where it still exists
        litellm.telemetry = False
    if "DISABLE_AIOHTTP_TRANSPORT" not in os.environ:
        # httpx transport for async calls: one HTTP stack, visible to respx in tests.
        litellm.disable_aiohttp_transport = True
    if already_imported:
        # Clients cached before the transport switch would keep the old transport.
        cache: Any = litellm.in_memory_llm_clients_cache
        cache.flush_cache()
    _quiet_loggers()
    _harden_clients()
    from agentensemble.llm._litellm_worker import quiet_logging_worker

    quiet_logging_worker()  # no "Task was destroyed but it is pending" when the loop changes
    return litellm


def _harden_clients() -> None:
    """Give every async HTTP client litellm makes our response hook (``_body_bound``): bodies
    bounded by their decoded size while they arrive, redirects never followed (litellm makes
    its clients with ``follow_redirects=True``: a 307 carried the prompt and extra headers to
    another host). Its two makers: ``AsyncHTTPHandler.create_client`` (its own providers) and
    ``BaseOpenAILLM._get_async_http_client`` (the ``openai`` package's clients it makes)."""
    from agentensemble.llm._body_bound import harden_client

    handler, openai_base = _client_makers()  # litellm's AsyncHTTPHandler, BaseOpenAILLM
    create = handler.create_client
    if not getattr(create, "_agentensemble_hardened", False):

        def create_client(self: Any, *args: Any, **kwargs: Any) -> Any:
            return harden_client(create(self, *args, **kwargs))

        create_client._agentensemble_hardened = True  # type: ignore[attr-defined]
        handler.create_client = create_client
    make = openai_base._get_async_http_client
    if not getattr(make, "_agentensemble_hardened", False):

        def get_async_http_client(*args: Any, **kwargs: Any) -> Any:
            return harden_client(make(*args, **kwargs))

        get_async_http_client._agentensemble_hardened = True  # type: ignore[attr-defined]
        openai_base._get_async_http_client = staticmethod(get_async_http_client)


class LiteLLMShapeError(ConfigurationError):
    """The installed litellm lacks a place the package bounds its HTTP clients at (another
    version than the pinned one): refused rather than calling models unbounded."""


#: Where litellm makes its async HTTP clients: (module, class, method).
CLIENT_MAKERS = (
    ("litellm.llms.custom_httpx.http_handler", "AsyncHTTPHandler", "create_client"),
    ("litellm.llms.openai.common_utils", "BaseOpenAILLM", "_get_async_http_client"),
)


def _client_makers() -> tuple[Any, Any]:
    """The two classes whose methods make litellm's async clients, checked to still have them;
    ``LiteLLMShapeError`` naming what is gone otherwise."""
    import importlib
    from importlib.metadata import PackageNotFoundError, version

    found: list[Any] = []
    missing: list[str] = []
    for module_name, class_name, method in CLIENT_MAKERS:
        try:
            owner = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            missing.append(f"{module_name}.{class_name} is gone")
            continue
        if not callable(getattr(owner, method, None)):
            missing.append(f"{class_name}.{method} is gone")
        found.append(owner)
    if missing:
        try:
            installed = version("litellm")
        except PackageNotFoundError:  # pragma: no cover - an unusual install
            installed = "unknown"
        raise LiteLLMShapeError(
            f"agentensemble bounds the answers of litellm's HTTP clients where litellm {installed} "
            f"no longer makes them: {'; '.join(missing)}. Install the litellm release "
            'agentensemble-py pins (pyproject.toml: "litellm[mcp]==1.106.2")'
        )
    return found[0], found[1]


def _quiet_loggers() -> None:
    """Detach litellm's console handlers; records propagate to the user's logging, if any.

    A NullHandler keeps Python's last-resort handler from printing warnings when the user has
    configured no logging. ``LITELLM_LOG`` in the environment means the user asked for
    litellm's own output, so then we leave its loggers alone.
    """
    if "LITELLM_LOG" in os.environ:
        return
    for name in _LITELLM_LOGGERS:
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            if type(handler).__module__.startswith("litellm"):
                logger.removeHandler(handler)
        if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
            logger.addHandler(logging.NullHandler())
        logger.propagate = True
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)  # litellm's debug chatter is not the user's business


__all__ = ["is_loaded", "load_litellm", "takes_input"]
