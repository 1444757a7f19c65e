"""Command groups owned by other packages, mounted on ``nego``.

Each package keeps its commands next to its code and exports a typer app or command; this
module is the one place that decides where they appear. Add new groups here.
"""

from __future__ import annotations

from negotiation.analysis import (
    analyze_command,
    contrast_command,
    frontier_command,
    packet_command,
    report_command,
    signoff_command,
    validate_command,
    viewer_command,
)
from negotiation.cli._app import app
from negotiation.evaluation import evaluate, serve_standin
from negotiation.pipeline import pipeline_app, status_command
from negotiation.protocol import protocol_app
from negotiation.registry import audit_command, deviation_app

app.add_typer(protocol_app, name="protocol")
app.command("audit")(audit_command)
app.add_typer(deviation_app, name="deviation")
app.command("evaluate")(evaluate)
app.command("serve-standin")(serve_standin)

for _name, _command in (("contrast", contrast_command), ("frontier", frontier_command),
                        ("validate", validate_command), ("analyze", analyze_command),
                        ("report", report_command), ("viewer", viewer_command),
                        ("packet", packet_command), ("signoff", signoff_command)):
    app.command(_name)(_command)

app.add_typer(pipeline_app, name="pipeline")
app.command("status")(status_command)

from negotiation.training.nemo import train_config  # noqa: E402  (imports no NeMo-RL until it runs)

app.command("train-config")(train_config)
