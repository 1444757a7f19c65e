"""What every DVC stage script shares: argument parsing, tracking URI, one-line errors."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import yaml

from negotiation._install import install_hint
from negotiation._logging import configure_logging
from negotiation.errors import ConfigError, NegotiationError
from negotiation.tracking import DEFAULT_EXPERIMENT_PREFIX, DEFAULT_TRACKING_URI, EXPERIMENT_PREFIX_ENV

if TYPE_CHECKING:
    from negotiation.study import Study

PARAMS_FILE = Path("params.yaml")


RUNTIME_KNOBS = {"evaluate.concurrency": "NEGO_EVAL_CONCURRENCY", "evaluate.backend": "NEGO_EVAL_BACKEND",
                 "evaluate.workers": "NEGO_EVAL_WORKERS", "tracking.uri": "MLFLOW_TRACKING_URI",
                 "training.micro_batch_tokens": "NEGO_TRAIN_MICRO_BATCH_TOKENS",
                 "training.rollout_processes": "NEGO_TRAIN_ROLLOUT_PROCESSES",
                 "training.gradient_checkpointing": "NEGO_TRAIN_GRADIENT_CHECKPOINTING",
                 "tracking.experiment_prefix": "NEGO_EXPERIMENT_PREFIX"}
"""Run-time knobs: ``params.yaml`` key -> environment variable that overrides it. They change how
a stage runs, never what it produces, so they are read when the stage runs and are NOT DVC stage
params (``dvc exp run -S evaluate.concurrency=32`` or moving the MLflow store reruns nothing)."""


def knob_source(key: str, params_file: Path = PARAMS_FILE) -> str:
    """Where run-time knob ``key`` is read from now, as its errors name it: ``$ENV`` when its
    environment variable is set, else ``params.yaml:key``."""
    env = RUNTIME_KNOBS[key]
    return f"${env}" if os.environ.get(env) not in (None, "") else f"{params_file}:{key}"


def runtime_knob(key: str, default: Any, params_file: Path = PARAMS_FILE) -> Any:
    """The value of run-time knob ``key`` (see ``RUNTIME_KNOBS``): its environment variable,
    else ``params.yaml``, else ``default``; converted to ``type(default)``."""
    raw, where = os.environ.get(RUNTIME_KNOBS[key]), knob_source(key, params_file)
    if raw in (None, "") and params_file.exists():
        node: Any = yaml.safe_load(params_file.read_text(encoding="utf-8")) or {}
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        raw = node
    if raw in (None, ""):
        return default
    try:
        value = type(default)(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: expected {type(default).__name__}, got {raw!r}") from None
    if isinstance(value, int) and value <= 0:
        raise ConfigError(f"{where}: expected a positive integer, got {raw!r}")
    return value


def runtime_switch(key: str, params_file: Path = PARAMS_FILE) -> bool | None:
    """Run-time knob ``key`` that is ``on`` (True), ``off`` (False) or ``auto`` (None: the caller
    decides); YAML's unquoted on/off arrive as booleans and count the same."""
    raw = str(runtime_knob(key, "auto", params_file)).lower()
    switches = {"auto": None, "on": True, "true": True, "off": False, "false": False}
    if raw not in switches:
        raise ConfigError(f"{knob_source(key, params_file)}: expected auto, on or off, got {raw!r}")
    return switches[raw]


def runtime_count(key: str, params_file: Path = PARAMS_FILE) -> int | None:
    """Run-time knob ``key`` that is ``auto`` (``None``: the caller counts) or a positive integer."""
    raw = runtime_knob(key, "auto", params_file)
    if raw == "auto":
        return None
    if not raw.isdigit() or int(raw) == 0:
        raise ConfigError(f"{knob_source(key, params_file)}: expected a positive integer or auto, got {raw!r}")
    return int(raw)


def tracking_uri_from_params(params_file: Path = PARAMS_FILE) -> str:
    """``tracking.uri`` (environment, else params.yaml, else the embedded default)."""
    return runtime_knob("tracking.uri", DEFAULT_TRACKING_URI, params_file)


def parser(description: str, *names: str) -> argparse.ArgumentParser:
    """A parser with ``--study`` and ``--profile`` plus the named string options (all required)."""
    from negotiation.protocol import PROFILES

    p = argparse.ArgumentParser(description=description)
    p.add_argument("--study", required=True, help="study under protocol/ (stage_main loads it: args.study is a Study)")
    p.add_argument("--profile", choices=PROFILES, default="cpu",
                   help="hardware profile whose evaluation design the stage reads (the GPU profile's stages: gpu)")
    for name in names:
        p.add_argument(f"--{name}", required=True)
    return p


def check_stage_names(args: argparse.Namespace) -> Study:
    """Load the study ``--study`` names (the stage's one ``load_study``) and check the ``--arm`` /
    ``--run`` / ``--size`` it is called with are safe names of it (a stage script run by hand with
    ``../x`` or a typo otherwise traced back)."""
    from negotiation.names import check_name
    from negotiation.study import load_study

    check_name("--study", args.study)
    given = {key: getattr(args, key) for key in ("arm", "run", "size") if getattr(args, key, None) is not None}
    for key, value in given.items():
        check_name(f"--{key}", value)
    study = load_study(args.study, profile=getattr(args, "profile", "cpu"))
    known = {"arm": study.arms,
             "run": {a.run for a in study.arms.values() if a.kind == "trained"}
             | {a.parent_run for a in study.arms.values() if getattr(a, "parent_run", None)},
             "size": study.protocol.sizes}
    for key, value in given.items():
        if value not in known[key]:
            article = "an" if key == "arm" else "a"
            raise ConfigError(f"--{key}:{value}: not {article} {key} of study {args.study!r}; known: {sorted(known[key])}")
    return study


def stage_main(p: argparse.ArgumentParser, run: Callable[[argparse.Namespace], Any]) -> None:
    """Parse, load the study once and check the names, run, print the result as JSON. ``run`` gets
    ``args.study`` as the loaded ``Study`` and passes it down (no layer loads it again). Bad input
    is one line and exit 2, any other user-fixable error (a package of an extra not installed,
    e.g. transformers for the lm study after ``make repro``) one line and exit 1."""
    args = p.parse_args()
    configure_logging(default=logging.INFO)  # progress lines of long stages (NEGO_LOG_LEVEL overrides)
    os.environ.setdefault("MLFLOW_TRACKING_URI", tracking_uri_from_params())
    os.environ.setdefault(EXPERIMENT_PREFIX_ENV, runtime_knob("tracking.experiment_prefix", DEFAULT_EXPERIMENT_PREFIX))
    try:
        args.study = check_stage_names(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    try:
        result = run(args)
    except NegotiationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    except ImportError as exc:
        if install_hint(exc) is None:
            raise
        print(f"error: {install_hint(exc)}", file=sys.stderr)
        raise SystemExit(1) from None
    if result is not None:
        print(json.dumps(result, indent=1, default=str))


def write_json(path: str | Path, payload: Any) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
