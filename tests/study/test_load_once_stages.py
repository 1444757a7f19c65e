"""The stage scripts tests/study/test_load_once.py does not run load the study once each too:
``tokenizer``, ``init``, ``train`` (demo policy, ``lm`` token trainer, paper NeMo-RL), ``track``,
``report`` (issue 29) and ``panel``. The heavy library call each ends in (a tokenizer, a warm start, a training
loop, a NeMo-RL launch) takes typed inputs, never a study name, so it is stubbed: the count covers
every layer from ``stage_main`` down to it.
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

import negotiation.study

ARM = "ref_conceder"


def _once(loads: list, stage, script: str, *args: str) -> None:
    before = len(loads)
    stage(script, *args)
    assert (script, len(loads) - before) == (script, 1), loads[before:]


def test_tokenizer_and_init_load_once(stage_env, stage, loads, monkeypatch, tmp_path):
    import negotiation.ladder as ladder

    monkeypatch.setattr(ladder, "write_tokenizer", lambda protocol, folder: {"stub": str(folder)})
    monkeypatch.setattr(ladder, "write_base", lambda protocol, size, tokenizer, folder, **kw: {"stub": str(folder)})
    (tmp_path / "models" / "google/gemma-4-E2B-it").mkdir(parents=True)
    monkeypatch.setenv("NEGO_MODELS_DIR", str(tmp_path / "models"))
    _once(loads, stage, "tokenizer", "--study", "lm", "--out", f"{stage_env}/tokenizer")
    _once(loads, stage, "init", "--study", "lm", "--size", "lm_xs", "--out", f"{stage_env}/init/lm_xs")
    _once(loads, stage, "init", "--study", "demo", "--size", "w16", "--out", f"{stage_env}/init/w16")
    _once(loads, stage, "init", "--study", "paper", "--size", "e2b", "--out", f"{stage_env}/init/e2b")
    assert (stage_env / "init" / "w16").is_dir()


def _stub_run(run_dir: Path) -> dict:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "curves.csv").write_text("step\n", encoding="utf-8")
    return SimpleNamespace(checkpoints=[], val_scores=[], seconds=0.0, mlflow_run_id=None)


def test_train_loads_once_on_each_backend(stage_env, stage, loads, monkeypatch, root):
    import negotiation.training as training
    import negotiation.training.lm as lm
    import negotiation.training.nemo as nemo
    import negotiation.training.nemo._launch as launch

    monkeypatch.setattr(training, "train_arm", lambda cfg, env, out, **kw: _stub_run(Path(out)))
    monkeypatch.setattr(lm, "train_lm_arm", lambda cfg, out, **kw: _stub_run(Path(out)))
    for name in ("demo", "lm"):
        run = "w16_lr3x" if name == "demo" else "lm_xs_lr3x"
        _once(loads, stage, "train", "--study", name, "--run", run, "--out", f"{stage_env}/{run}",
              "--curves", f"{stage_env}/curves/{run}.csv")

    class Launched(Exception):
        """The launch got past its checks (and every load) to the NeMo-RL part."""

    def merged(nemo_config, overrides):
        raise Launched

    monkeypatch.setenv("NEGO_ROOT", str(root))  # the NeMo-RL config goes under the root's outputs/
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{root / 'mlflow.db'}")  # NeMo-RL's metric names
    monkeypatch.setattr(nemo, "require_backend", lambda **kw: None)
    monkeypatch.setattr(launch, "require_backend", lambda **kw: None)
    monkeypatch.setattr(launch, "_merged_config", merged)
    before = len(loads)
    with pytest.raises(Launched):
        stage("train", "--study", "paper", "--run", "e2b_lr3x", "--out", f"{stage_env}/e2b", "--curves",
              f"{stage_env}/curves/e2b.csv")
    assert len(loads) - before == 1, loads[before:]


def test_track_and_report_load_once(stage_env, stage, loads, monkeypatch):
    from negotiation.analysis import write_synthetic_results
    import negotiation.pipeline._analysis as analysis_stage

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{stage_env.parent / 'mlflow.db'}")
    results = str(stage_env)
    for script, args in (("select_arm", ["--arm", ARM, "--results", results]),
                         ("pilot", ["--arm", ARM, "--results", results]),
                         ("evaluate", ["--arm", ARM, "--results", results, "--metrics", f"{results}/m.json"])):
        stage(script, "--study", "demo", *args)
    _once(loads, stage, "track", "--study", "demo", "--results", results, "--out", f"{results}/track.json")

    study = negotiation.study.load_study("demo")
    synthetic = write_synthetic_results(study.protocol, list(study.arms), stage_env.parent / "synthetic", seed=3).dir
    bootstrap = analysis_stage.bootstrap_settings
    monkeypatch.setattr(analysis_stage, "bootstrap_settings",  # 100 resamples: the count, not the interval
                        lambda protocol, **kw: bootstrap(protocol, **{**kw, "resamples": 100}))
    _once(loads, stage, "report", "--study", "demo", "--results", str(synthetic), "--out", f"{synthetic}/report",
          "--seed", "0", "--viewer-episodes", "20")


def test_panel_loads_once(stage_env, stage, loads, monkeypatch):
    import negotiation.pipeline._panel as panel_stage

    monkeypatch.setattr(panel_stage, "planned_arms", lambda study, results: [ARM])  # one arm's seller is enough
    stage("select_arm", "--study", "demo", "--arm", ARM, "--results", str(stage_env))
    _once(loads, stage, "panel", "--study", "demo", "--results", str(stage_env))
    assert (stage_env / "panel" / ARM / "episodes.parquet").is_file()


COUNTED = {"scenarios", "select_arm", "pilot", "evaluate", "validate", "analyze", "audit",  # test_load_once.py
           "tokenizer", "init", "train", "track", "report", "panel"}  # this file
NO_STUDY = {"fingerprint"}
"""Stage scripts that read no study: ``code_<kind>`` hashes code files with the standard library."""


def test_every_stage_script_is_counted():
    """A new stage script joins a counting test (its load through ``stage_main``, once), unless it
    reads no study at all (it then imports nothing of the package)."""
    from tests.study.conftest import REPO

    assert {path.stem for path in (REPO / "pipelines").glob("*.py")} == COUNTED | NO_STUDY
    for name in NO_STUDY:
        tree = ast.parse((REPO / "pipelines" / f"{name}.py").read_text(encoding="utf-8"))
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert not any(m.split(".")[0] == "negotiation" for m in imported), (name, sorted(imported))
