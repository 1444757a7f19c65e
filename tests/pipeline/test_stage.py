"""Run-time knobs: read when a stage runs (environment, then params.yaml), never DVC stage params."""

from __future__ import annotations

import re

import pytest
import yaml

from negotiation.errors import ConfigError
from negotiation.pipeline import RUNTIME_KNOBS, runtime_knob
from negotiation.pipeline._studyfile import derive_study_pipeline
from negotiation.study import default_root

ROOT = default_root()


def _stage_bodies(graph: dict) -> dict[str, dict]:
    return {name: (stage["do"] if "foreach" in stage else stage) for name, stage in graph["stages"].items()}


def _param_keys(body: dict) -> set[str]:
    keys: set[str] = set()
    for entry in body.get("params", []) or []:
        if isinstance(entry, str):
            keys.add(entry)
        else:  # {file: [keys]}: only params.yaml holds run-time knobs
            keys.update(k for f, ks in entry.items() if f.endswith("params.yaml") for k in ks)
    return keys


@pytest.mark.parametrize("pipeline", ["dvc.yaml", "paper"])
def test_no_stage_depends_on_a_runtime_knob(pipeline):
    text = (ROOT / "dvc.yaml").read_text() if pipeline == "dvc.yaml" else derive_study_pipeline(pipeline, ROOT)
    for name, body in _stage_bodies(yaml.safe_load(text)).items():
        for knob in RUNTIME_KNOBS:
            assert knob not in _param_keys(body), f"{name} has run-time knob {knob} as a param"
            assert not re.search(r"\$\{" + re.escape(knob) + r"\}", body["cmd"]), f"{name} passes {knob} in cmd"


def test_every_runtime_knob_is_in_params_yaml():
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for knob in RUNTIME_KNOBS:
        node = params
        for part in knob.split("."):
            node = node[part]
        assert node not in (None, "")


def test_knob_reads_environment_then_params_then_default(tmp_path, monkeypatch):
    params = tmp_path / "params.yaml"
    monkeypatch.delenv("NEGO_EVAL_CONCURRENCY", raising=False)
    assert runtime_knob("evaluate.concurrency", 16, params) == 16
    params.write_text("evaluate:\n  concurrency: 32\n")
    assert runtime_knob("evaluate.concurrency", 16, params) == 32
    monkeypatch.setenv("NEGO_EVAL_CONCURRENCY", "4")
    assert runtime_knob("evaluate.concurrency", 16, params) == 4


@pytest.mark.parametrize("value", ["many", "0", "-3"])
def test_bad_knob_names_file_key_and_value(tmp_path, monkeypatch, value):
    monkeypatch.delenv("NEGO_EVAL_CONCURRENCY", raising=False)
    params = tmp_path / "params.yaml"
    params.write_text(f"evaluate:\n  concurrency: '{value}'\n")
    with pytest.raises(ConfigError, match=rf"params.yaml:evaluate.concurrency: .*{re.escape(value)}"):
        runtime_knob("evaluate.concurrency", 16, params)
