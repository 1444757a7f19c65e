"""Command groups owned by other packages, mounted on ``nego``.

Each package keeps its commands next to its code and exports a typer app or command; this
module is the one place that decides where they appear. They are registered lazily (by
``module:attribute``), so a command imports only its own package: ``nego parse`` never pays
for torch, pandas' analysis stack or NeMo. Add new groups here.
"""

from __future__ import annotations

from negotiation.cli._app import lazy_command

_COMMANDS = {
    "protocol": "negotiation.protocol:protocol_app",
    "audit": "negotiation.registry:audit_command",
    "deviation": "negotiation.registry:deviation_app",
    "evaluate": "negotiation.evaluation:evaluate",
    "serve-standin": "negotiation.evaluation:serve_standin",
    "contrast": "negotiation.analysis:contrast_command",
    "frontier": "negotiation.analysis:frontier_command",
    "validate": "negotiation.analysis:validate_command",
    "analyze": "negotiation.analysis:analyze_command",
    "report": "negotiation.analysis:report_command",
    "viewer": "negotiation.analysis:viewer_command",
    "packet": "negotiation.analysis:packet_command",
    "signoff": "negotiation.analysis:signoff_command",
    "pipeline": "negotiation.pipeline:pipeline_app",
    "status": "negotiation.pipeline:status_command",
    "train-config": "negotiation.training.nemo:train_config",
}

for _name, _target in _COMMANDS.items():
    lazy_command(_name, _target)
