"""The process's registered ensembles: which factory builds a durable run's ensemble, by name.

The one place that holds ``DurableRuntime.register``'s names. The run's workflow
(``_runtime.py``) builds its ensemble here, in whichever process recovers or dequeues the run;
``launch()``, ``arun`` and ``asubmit`` check here that a name builds, before any run starts. A
factory seen to build is remembered, so ``asubmit`` calls it once per registered factory, not once
per submit; registering a name again forgets it. Never starts, runs or records a run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from agentensemble.ensemble import Ensemble
from agentensemble.errors import ConfigurationError

EnsembleFactory = Callable[[], Ensemble]

# The process's registered ensembles: the workflow function finds its ensemble here by name,
# in whichever process recovers or dequeues the run.
_registry: dict[str, EnsembleFactory] = {}
_registry_lock = threading.Lock()
# name -> the factory whose build last succeeded here: ``asubmit`` checks a name once per
# registered factory (launch() checks each), not once per submit; registering replaces it
_checked: dict[str, EnsembleFactory] = {}


def register(name: str, ensemble: Ensemble | EnsembleFactory) -> None:
    """Make ``ensemble`` (or a zero-argument factory building it) runnable as ``name``."""
    if not name or not name.strip():
        raise ConfigurationError("an ensemble needs a non-blank name to run durably")
    factory: EnsembleFactory
    if isinstance(ensemble, Ensemble):
        built = ensemble

        def factory() -> Ensemble:
            return built
    elif callable(ensemble):
        factory = ensemble
    else:
        raise ConfigurationError(
            f"register({name!r}, ...) needs an Ensemble or a function returning one; got "
            f"{type(ensemble).__name__}"
        )
    with _registry_lock:
        _registry[name] = factory
        _checked.pop(name, None)


def build_every_registered() -> None:
    """Build every registered ensemble once (launch's check), or fail naming the fix: a run must
    find its ensemble at recovery."""
    with _registry_lock:
        names = list(_registry)
    if not names:
        raise ConfigurationError(
            "no ensemble is registered: call runtime.register(name, ensemble) before launch()"
        )
    for name in names:
        build(name)  # the determinism guard: a run must find its ensemble at recovery


def check(name: str) -> None:
    """Fail now if ``name`` is not registered or its factory has never built an ensemble here;
    a factory already seen to build is not called again just to check it."""
    with _registry_lock:
        factory = _registry.get(name)
        if factory is not None and _checked.get(name) is factory:
            return
    build(name)


def build(name: str) -> Ensemble:
    """The ensemble registered as ``name``, built by its factory now (ConfigurationError if the
    name is not registered or its factory returns no Ensemble)."""
    with _registry_lock:
        factory = _registry.get(name)
    if factory is None:
        known = ", ".join(sorted(_registry)) or "none"
        raise ConfigurationError(
            f"no ensemble is registered as {name!r} in this process (registered: {known}); "
            "import the module that registers it before launching the runtime"
        )
    ensemble = factory()
    if not isinstance(ensemble, Ensemble):
        raise ConfigurationError(
            f"the factory registered as {name!r} returned {type(ensemble).__name__}, not an "
            "Ensemble"
        )
    with _registry_lock:
        if _registry.get(name) is factory:  # not replaced while it built
            _checked[name] = factory
    return ensemble


__all__ = ["EnsembleFactory", "build", "build_every_registered", "check", "register"]
