"""``nego train-config STUDY ARM`` on a frozen copy of the paper protocol."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from negotiation.env import REPO_ROOT
from negotiation.errors import ConfigError
from negotiation.cli._train_cmds import train_config
from negotiation.study import freeze
from negotiation.training.nemo import BackendUnavailableError, read_train_config

app = typer.Typer()
app.callback()(lambda: None)
app.command("train-config")(train_config)


@pytest.fixture(scope="module")
def frozen_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    shutil.copytree(REPO_ROOT / "protocol" / "domains", root / "protocol" / "domains")
    for study in ("paper", "demo"):
        shutil.copytree(REPO_ROOT / "protocol" / study, root / "protocol" / study)
        (root / "protocol" / study / "lock.yaml").unlink(missing_ok=True)
        freeze(study, root)
        shutil.copytree(REPO_ROOT / "registry" / study, root / "registry" / study)
    return root


def test_writes_the_continuation_config_of_an_arm(frozen_root, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracking:5000")
    result = CliRunner().invoke(app, ["train-config", "paper", "e4b_shared_104", "--no-tokenizer",
                                      "--runs-dir", str(tmp_path), "--root", str(frozen_root)])
    assert result.exit_code == 0, result.output
    path = tmp_path / "e4b_shared_cont" / "grpo.yaml"
    # The 4.5B initial run lost step 64: registry/paper/continuations.yaml branches it at 56 for 48 steps.
    assert f"wrote {path}" in result.output and "48 steps from combined step 56" in result.output
    nemo, ours, plan = read_train_config(path)
    assert plan.run == "e4b_shared_cont" and plan.arm == "e4b_shared_104"
    assert nemo["logger"]["mlflow"]["tracking_uri"] == "http://tracking:5000"
    lock = yaml.safe_load((frozen_root / "protocol" / "paper" / "lock.yaml").read_text())
    assert ours["protocol_hash"] == lock["protocol_hash"]
    # Without a tokenizer the launcher derives tags and stop ids before training.
    assert nemo["env"]["negotiation"]["turn_tags"] is None and nemo["policy"]["generation"]["stop_token_ids"] is None


def test_a_continuation_on_the_rule_and_an_added_arms_run(frozen_root, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracking:5000")
    for arm, run, said in (("12b_shared_104", "12b_shared_cont", "40 steps from combined step 64"),
                           ("e2b_lr3x_56", "e2b_lr3x", "64 steps from combined step 0")):
        result = CliRunner().invoke(app, ["train-config", "paper", arm, "--no-tokenizer",
                                          "--runs-dir", str(tmp_path), "--root", str(frozen_root)])
        assert result.exit_code == 0, result.output
        assert said in result.output and read_train_config(tmp_path / run / "grpo.yaml")[2].run == run


def test_the_parent_only_run_and_an_explicit_output(frozen_root, tmp_path):
    out = tmp_path / "x.yaml"
    result = CliRunner().invoke(app, ["train-config", "paper", "e4b_shared_init", "--no-tokenizer", "--seed", "7",
                                      "--out", str(out), "--runs-dir", str(tmp_path), "--root", str(frozen_root)])
    assert result.exit_code == 0, result.output
    nemo, ours, plan = read_train_config(out)
    assert (plan.steps, plan.seed, nemo["grpo"]["seed"], ours["parent_weights"]) == (64, 7, 7, None)


def test_a_demo_arm_is_refused_by_name(frozen_root, tmp_path):
    result = CliRunner().invoke(app, ["train-config", "demo", "w16_lr3x", "--no-tokenizer",
                                      "--runs-dir", str(tmp_path), "--root", str(frozen_root)])
    assert isinstance(result.exception, ConfigError)
    assert "sizes.w16.kind: 'policy'" in str(result.exception)


@pytest.mark.skipif(importlib.util.find_spec("transformers") is not None, reason="transformers is installed")
def test_deriving_tags_without_transformers_names_it(frozen_root, tmp_path):
    result = CliRunner().invoke(app, ["train-config", "paper", "e2b_shared_init",
                                      "--runs-dir", str(tmp_path), "--root", str(frozen_root)])
    assert isinstance(result.exception, BackendUnavailableError)
    assert "'transformers'" in str(result.exception)
