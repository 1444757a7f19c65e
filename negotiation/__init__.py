"""Declarative, reproducible registry for an RL study of LLM negotiators.

Subpackages: ``env`` (domains, scenarios, scoring, parser, engine, reward), ``agents``,
``protocol``, ``registry``, ``training``, ``evaluation``, ``analysis`` and ``cli``.
"""

import os as _os

# litellm downloads a price map at import time unless told to use its bundled copy; the
# project must work with no network beyond package registries, so this is set for every
# entry point (CLI, DVC stages, tests) before anything can import litellm.
_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

__version__ = "0.1.0"
__all__ = ["__version__"]
