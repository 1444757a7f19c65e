"""The ``nego`` command line (typer + rich); ``negotiation.cli:main`` is the console script.

The environment's commands (``_env_cmds``) register themselves on ``app`` when imported below
and import what they use when they run; every other command is registered lazily by
``_mounts`` (its module is imported only when it is invoked), so ``nego --help`` and the light
commands start without numpy, torch or the analysis stack.
"""

from negotiation.cli import _env_cmds, _mounts  # noqa: F401 - importing registers the commands
from negotiation.cli._app import EXIT_FAILED, EXIT_INPUT, app, main, run
from negotiation.cli._config import PHASES, checkpoint_study, dirichlet_alpha_for, env_config_for

__all__ = ["EXIT_FAILED", "EXIT_INPUT", "PHASES", "app", "checkpoint_study", "dirichlet_alpha_for", "env_config_for",
           "main", "run"]
