"""The ``nego`` command line (typer + rich); ``negotiation.cli:main`` is the console script.

Each command group registers itself on ``app`` when its module is imported below; other
packages' sub-apps are mounted here with ``app.add_typer``.
"""

from negotiation.cli import _env_cmds, _play, _mounts  # noqa: F401 - importing registers the commands
from negotiation.cli._app import EXIT_FAILED, EXIT_INPUT, app, main, run
from negotiation.cli._config import PHASES, dirichlet_alpha_for, env_config_for

__all__ = ["EXIT_FAILED", "EXIT_INPUT", "PHASES", "app", "dirichlet_alpha_for", "env_config_for", "main", "run"]
