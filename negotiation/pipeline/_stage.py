"""What every DVC stage script shares: argument parsing, tracking URI, one-line errors."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

import yaml

from negotiation.errors import NegotiationError
from negotiation.tracking import DEFAULT_TRACKING_URI

PARAMS_FILE = Path("params.yaml")


def tracking_uri_from_params(params_file: Path = PARAMS_FILE) -> str:
    """``tracking.uri`` of params.yaml (read at run time, not a DVC param: moving the store
    must not retrain anything), else the embedded default."""
    if params_file.exists():
        params = yaml.safe_load(params_file.read_text(encoding="utf-8")) or {}
        uri = (params.get("tracking") or {}).get("uri")
        if uri:
            return str(uri)
    return DEFAULT_TRACKING_URI


def parser(description: str, *names: str) -> argparse.ArgumentParser:
    """A parser with ``--study`` plus the named string options (all required)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--study", required=True, help="study under protocol/")
    for name in names:
        p.add_argument(f"--{name}", required=True)
    return p


def stage_main(p: argparse.ArgumentParser, run: Callable[[argparse.Namespace], Any]) -> None:
    """Parse, run, print the result as JSON; a user-fixable error is one line and exit 1."""
    args = p.parse_args()
    os.environ.setdefault("MLFLOW_TRACKING_URI", tracking_uri_from_params())
    try:
        result = run(args)
    except NegotiationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    if result is not None:
        print(json.dumps(result, indent=1, default=str))


def write_json(path: str | Path, payload: Any) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
