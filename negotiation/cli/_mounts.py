"""The command groups over the heavier packages, mounted on ``nego``.

Their modules live in this package (``_<group>_cmds.py``, thin wrappers over each package's
library functions); this module is the one place that decides where they appear. They are
registered lazily (by ``module:attribute``), so a command imports only its own package:
``nego parse`` never pays for torch, pandas' analysis stack or NeMo. Add new groups here.
"""

from __future__ import annotations

from negotiation.cli._app import lazy_command

_COMMANDS = {
    "protocol": "negotiation.cli._protocol_cmds:protocol_app",
    "audit": "negotiation.cli._registry_cmds:audit_command",
    "deviation": "negotiation.cli._registry_cmds:deviation_app",
    "evaluate": "negotiation.cli._evaluate_cmds:evaluate",
    "serve-standin": "negotiation.cli._evaluate_cmds:serve_standin",
    "contrast": "negotiation.cli._analysis_cmds:contrast_command",
    "frontier": "negotiation.cli._analysis_cmds:frontier_command",
    "validate": "negotiation.cli._analysis_cmds:validate_command",
    "analyze": "negotiation.cli._analysis_cmds:analyze_command",
    "report": "negotiation.cli._analysis_cmds:report_command",
    "viewer": "negotiation.cli._analysis_cmds:viewer_command",
    "packet": "negotiation.cli._analysis_cmds:packet_command",
    "signoff": "negotiation.cli._analysis_cmds:signoff_command",
    "pipeline": "negotiation.cli._pipeline_cmds:pipeline_app",
    "status": "negotiation.cli._pipeline_cmds:status_command",
    "train-config": "negotiation.cli._train_cmds:train_config",
}

for _name, _target in _COMMANDS.items():
    lazy_command(_name, _target)
