"""Declarative, reproducible registry for an RL study of LLM negotiators.

Subpackages: ``env`` (domains, scenarios, scoring, parser, engine, reward), ``agents``,
``protocol``, ``registry``, ``training``, ``evaluation``, ``analysis`` and ``cli``.
"""

import os as _os

# litellm downloads a price map at import time unless told to use its bundled copy; the
# project must work with no network beyond package registries, so this is set for every
# entry point (CLI, DVC stages, tests) before anything can import litellm.
_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Telemetry is off unless the user turns it on (as DVC's is, in .dvc/config): MLflow's usage
# telemetry and great-expectations' analytics would otherwise phone home from every stage.
# Set MLFLOW_DISABLE_TELEMETRY=false or GX_ANALYTICS_ENABLED=true in the environment to opt in.
_os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
_os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
# pydantic looks for plugins in the entry points of every installed distribution when it builds
# its first model (about 0.04 s of each command's start-up, with some 200 installed); the
# project uses none. Set PYDANTIC_DISABLE_PLUGINS to the empty string to load installed ones.
_os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

__version__ = "0.1.0"
__all__ = ["__version__"]
