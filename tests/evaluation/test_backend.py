"""Choosing the execution backend: the default (local) path never loads Ray, and a bad choice
is a clear error naming where it came from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from negotiation.errors import ConfigError
from negotiation.evaluation import ExecutionBackend, parse_backend

REPO = Path(__file__).resolve().parents[2]

LOCAL_RUN = """
import asyncio, sys, tempfile
import negotiation.pipeline._evaluate  # the evaluate stage's module, as `evaluate@` imports it
from negotiation.evaluation import RunOptions, build_cell, evaluate_cell
from negotiation.study import load_study
protocol = load_study("demo").protocol
cell = build_cell(protocol, arm="a", seller="scripted:boulware", domains=("used_car",), seeds=(5000000,))
with tempfile.TemporaryDirectory() as out:
    result = asyncio.run(evaluate_cell(cell, out, protocol, protocol_hash="p", options=RunOptions(pilot=False)))
assert len(result.episodes) == 2, result.episodes
print(sorted(m for m in sys.modules if m == "ray" or m.startswith("ray.")))
"""


def test_the_local_backend_imports_no_ray():
    done = subprocess.run([sys.executable, "-c", LOCAL_RUN], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_the_default_backend_is_local():
    assert ExecutionBackend().kind == "local" and parse_backend("ray", 4) == ExecutionBackend(kind="ray", workers=4)


def test_an_unknown_backend_names_its_source():
    with pytest.raises(ConfigError, match=r"params.yaml:evaluate.backend: expected one of local, ray, got 'spark'"):
        parse_backend("spark", where="params.yaml:evaluate.backend")


def test_the_stage_reads_the_backend_knob_from_the_environment(monkeypatch):
    from negotiation.pipeline._evaluate import _backend

    monkeypatch.setenv("NEGO_EVAL_BACKEND", "ray")
    monkeypatch.setenv("NEGO_EVAL_WORKERS", "3")
    assert _backend() == ExecutionBackend(kind="ray", workers=3)
    monkeypatch.setenv("NEGO_EVAL_BACKEND", "dask")
    with pytest.raises(ConfigError, match=r"\$NEGO_EVAL_BACKEND: expected one of local, ray, got 'dask'"):
        _backend()
    monkeypatch.setenv("NEGO_EVAL_BACKEND", "ray")
    monkeypatch.setenv("NEGO_EVAL_WORKERS", "two")
    with pytest.raises(ConfigError, match=r"\$NEGO_EVAL_WORKERS: expected a positive integer or auto, got 'two'"):
        _backend()
    monkeypatch.setenv("NEGO_EVAL_WORKERS", "auto")
    assert _backend() == ExecutionBackend(kind="ray")
