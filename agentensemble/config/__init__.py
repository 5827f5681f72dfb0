"""Crew files: ``Ensemble.from_yaml(path)`` and ``Ensemble.from_dict(data)``; see docs/yaml.md."""

from agentensemble.config._positions import ConfigFileError
from agentensemble.config.loader import ensemble_from_dict, ensemble_from_yaml

__all__ = ["ConfigFileError", "ensemble_from_dict", "ensemble_from_yaml"]
