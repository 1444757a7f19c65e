"""The command groups over the heavier packages, mounted on ``nego``.

Their modules live in this package (``_<group>_cmds.py``, thin wrappers over each package's
library functions); this module is the one place that decides where they appear. They are
registered lazily (by ``module:attribute``), so a command imports only its own package:
``nego parse`` never pays for torch, pandas' analysis stack or NeMo. Add new groups here.
"""

from __future__ import annotations

from negotiation.cli._app import lazy_command

_COMMANDS = {  # name: (module:attribute, the one-line help `nego --help` shows without importing it)
    "play": ("negotiation.cli._play:play_command",
             "Play one episode and print the transcript, or with --json the episode record."),
    "protocol": ("negotiation.cli._protocol_cmds:protocol_app",
                 "Freeze and verify a study's protocol: protocol/<study>/{protocol,arms}.yaml and its domains."),
    "domain": ("negotiation.cli._domain_cmds:domain_app",
               "Import a Genius/NegMAS scenario as a domain, or export one of ours as one."),
    "agents": ("negotiation.cli._agents_cmds:agents_app",
               "List the ANAC agents that negmas:<Name> seats, by year, and which of them run."),
    "audit": ("negotiation.cli._registry_cmds:audit_command",
              "Audit a study against its frozen protocol; exit 1 on any uncovered departure."),
    "deviation": ("negotiation.cli._registry_cmds:deviation_app",
                  "Append to a study's deviation log (registry/<study>/deviations/)."),
    "evaluate": ("negotiation.cli._evaluate_cmds:evaluate",
                 "Evaluate a seller against buyers over domains x seeds; resumable, with retries and error rows."),
    "serve-standin": ("negotiation.cli._standin_cmds:serve_standin",
                      "Serve scripted personas (model = boulware, conceder, linear, titfortat, fixed) over "
                      "OpenAI's chat API."),
    "contrast": ("negotiation.cli._analysis_cmds:contrast_command",
                 "Paired seed-cluster bootstrap of MINUEND − SUBTRAHEND on one metric."),
    "power": ("negotiation.cli._analysis_cmds:power_command",
              "Smallest paired gain a design of K seed clusters detects (Holm's first step, normal approximation)."),
    "frontier": ("negotiation.cli._analysis_cmds:frontier_command",
                 "Exact Pareto frontier, Nash point and maximum welfare of one scenario (Ũ space)."),
    "validate": ("negotiation.cli._analysis_cmds:validate_command",
                 "Validate every arm's episode table (great-expectations); exit 1 naming failures."),
    "analyze": ("negotiation.cli._analysis_cmds:analyze_command",
                "Metrics, contrasts (Holm on the primary family), frontier columns and guards → analyze/."),
    "report": ("negotiation.cli._analysis_cmds:report_command",
               "Validated tables → analysis → report.html, report.md, figures/*.png and transcripts.html."),
    "viewer": ("negotiation.cli._analysis_cmds:viewer_command",
               "Static transcript viewer over the episode and turn tables."),
    "packet": ("negotiation.cli._analysis_cmds:packet_command",
               "Seeded hand-read packet: transcripts per trained arm per domain family, with a viewer."),
    "signoff": ("negotiation.cli._analysis_cmds:signoff_command",
                "Record a reader's hand-read sign-off of an arm in registry/<study>/signoffs/<arm>.yaml."),
    "pipeline": ("negotiation.cli._pipeline_cmds:pipeline_app",
                 "The DVC pipeline's derived files (plan and per-study pipeline) and kept results."),
    "status": ("negotiation.cli._pipeline_cmds:status_command",
               "Per arm what is trained, selected, gated and evaluated; validation, audit and report."),
    "train-config": ("negotiation.cli._train_cmds:train_config",
                     "Write the NeMo-RL GRPO config of ARM's training run from the frozen protocol."),
    "learn-task": ("negotiation.cli._learning_cmds:learn_task",
                   "Run one learning-ladder task end to end; print its verdict; exit 1 when it fails."),
}

for _name, (_target, _help) in _COMMANDS.items():
    lazy_command(_name, _target, _help)
