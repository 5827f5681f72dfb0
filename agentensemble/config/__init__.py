"""Crew files: ``load_crew(path)`` (or ``load_crew(data)``); see docs/yaml.md.

Crew-file loading sits above the ``Ensemble`` facade (it builds one), so the facade has no
``from_yaml``: that would be an import circle between the two.
"""

from agentensemble.config._positions import ConfigFileError
from agentensemble.config.loader import ensemble_from_dict, ensemble_from_yaml, load_crew

__all__ = ["ConfigFileError", "ensemble_from_dict", "ensemble_from_yaml", "load_crew"]
