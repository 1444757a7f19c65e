"""``keep_results`` / ``nego pipeline keep``: a results folder's raw tables and records, and only
those, copied at their layout paths, so analysis and the audit read the kept folder as they read
the original."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from negotiation.analysis import write_synthetic_results
from negotiation.cli import app
from negotiation.errors import ConfigError
from negotiation.pipeline import build_plan, keep_results, run_analyze, run_validate
from negotiation.registry import run_audit
from negotiation.study import ResultsLayout, load_study

RECORDS = {  # relative path -> kept?
    "select/{arm}/seller.json": True, "select/{arm}/selection.json": True, "pilot/{arm}.json": True,
    "evaluate/{arm}/sampling.json": True, "evaluate/{arm}/metrics.json": True,
    "pilot/{arm}/episodes.parquet": False, "evaluate/{arm}/shards/0001.parquet": False,
    "evaluate/{arm}/fingerprint.json": False,
    "panel/{arm}/episodes.parquet": True, "panel/{arm}/turns.parquet": True, "panel/{arm}/shards/0001.parquet": False,
}
RUN_FILES = {
    "train/{run}/curves.csv": True, "train/{run}/validation.csv": True, "curves/{run}.csv": True,
    "train/{run}/step_8/training_info.json": True, "train/{run}/step_8/weights.pt": False,
    "train/{run}/step_8/config.json": False, "train/{run}/resume.pt": False,
    "train/{run}/mlflow_run.json": True, "train/{run}/mlflow_run.times.json": True,
}
OTHERS = {"init/w16/weights.pt": False, "scenarios/evaluation.parquet": False}
DERIVED = ("analyze/contrasts.json", "validate/report.json", "report/report.md", "audit.json")


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> tuple[Path, list[str], dict[str, bool]]:
    """Synthetic demo tables for the planned arms, plus a file at every kind of path the layout has."""
    study = load_study("demo")
    arms = list(build_plan(study)["plan"]["arms"])
    folder = write_synthetic_results(study.protocol, arms, tmp_path_factory.mktemp("r") / "demo", seed=5).dir
    expected = {f"evaluate/{arm}/{name}": True for arm in arms for name in ("episodes.parquet", "turns.parquet")}
    for arm in arms:
        expected |= {path.format(arm=arm): kept for path, kept in RECORDS.items()}
    expected |= {path.format(run="w16_shared"): kept for path, kept in RUN_FILES.items()} | OTHERS
    for path in expected:
        if not (folder / path).exists():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(json.dumps({"path": path}), encoding="utf-8")
    return folder, arms, expected


def test_keep_copies_the_tables_and_records_and_nothing_else(results, tmp_path):
    folder, _, expected = results
    kept = keep_results(folder, tmp_path / "kept")
    assert sorted(map(str, kept.files)) == sorted(path for path, keep in expected.items() if keep)
    on_disk = sorted(str(p.relative_to(tmp_path / "kept")) for p in (tmp_path / "kept").rglob("*") if p.is_file())
    assert on_disk == sorted(map(str, kept.files))
    for path in kept.files:
        assert (tmp_path / "kept" / path).read_bytes() == (folder / path).read_bytes()
    assert kept.bytes == sum((folder / path).stat().st_size for path in kept.files)


def _analysed(results_dir: Path, out: Path) -> Path:
    """``results_dir`` copied to ``out``, then validated and analysed there (both write into it)."""
    shutil.copytree(results_dir, out)
    run_validate("demo", out)
    run_analyze("demo", out, ResultsLayout(out).analyze, seed=0, resamples=200)
    return out


def test_analysis_and_audit_of_the_kept_folder_equal_the_original(results, tmp_path):
    folder, _, _ = results
    keep_results(folder, tmp_path / "kept")
    original, kept = _analysed(folder, tmp_path / "a" / "demo"), _analysed(tmp_path / "kept", tmp_path / "b" / "demo")
    written = sorted(p.name for p in ResultsLayout(original).analyze.iterdir())
    assert written == sorted(p.name for p in ResultsLayout(kept).analyze.iterdir()) and "contrasts.json" in written
    for name in written:
        assert (ResultsLayout(kept).analyze / name).read_bytes() == (ResultsLayout(original).analyze / name).read_bytes()

    def findings(results_dir: Path) -> list[tuple[str, str, str]]:
        report = run_audit("demo", results_dir=results_dir)
        return sorted((f.check, f.status, f.evidence.replace(str(results_dir), "<results>")) for f in report.findings)

    assert findings(kept) == findings(original)


def test_derived_stage_outputs_stay_behind(results, tmp_path):
    folder, _, _ = results
    shutil.copytree(folder, tmp_path / "r")
    for path in DERIVED:
        (tmp_path / "r" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "r" / path).write_text("{}", encoding="utf-8")
    kept = keep_results(tmp_path / "r", tmp_path / "kept")
    assert not {str(p) for p in kept.files} & set(DERIVED)
    assert sorted(map(str, kept.files)) == sorted(map(str, keep_results(folder, tmp_path / "kept2").files))


def test_keep_refuses_a_used_or_nested_folder_and_a_folder_without_tables(results, tmp_path):
    folder, _, _ = results
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "old.txt").write_text("x")
    with pytest.raises(ConfigError, match="used: not empty"):
        keep_results(folder, tmp_path / "used")
    with pytest.raises(ConfigError, match="must lie outside the results folder"):
        keep_results(folder, folder / "kept")
    with pytest.raises(ConfigError, match="no results"):
        keep_results(tmp_path / "nothing", tmp_path / "k1")
    (tmp_path / "bare" / "select" / "a").mkdir(parents=True)
    with pytest.raises(ConfigError, match="no episode table to keep"):
        keep_results(tmp_path / "bare", tmp_path / "k2")
    assert (tmp_path / "used" / "old.txt").read_text() == "x"


def test_the_command_prints_what_it_kept(results, tmp_path):
    folder, _, expected = results
    out = CliRunner().invoke(app, ["pipeline", "keep", str(folder), str(tmp_path / "kept"), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert sorted(data["files"]) == sorted(path for path, keep in expected.items() if keep)
    again = CliRunner().invoke(app, ["pipeline", "keep", str(folder), str(tmp_path / "kept")])
    assert again.exit_code == 2 and "not empty" in again.output


def _metric_histories(client, experiment: str) -> dict[str, dict]:
    """Per logged run (by arm and phase): its params, user tags and every metric's history."""
    exp = client.get_experiment_by_name(experiment).experiment_id
    out = {}
    for run in client.search_runs([exp]):
        tags = {k: v for k, v in run.data.tags.items() if not k.startswith("mlflow.") and k != "parent_run"}
        history = {key: [(m.step, m.value, m.timestamp) for m in client.get_metric_history(run.info.run_id, key)]
                   for key in run.data.metrics}
        out[(run.data.tags["arm"], run.data.tags["phase"])] = (run.data.params, tags, history,
                                                               (run.info.start_time, run.info.end_time))
    return out


def test_track_logs_the_same_runs_from_a_kept_folder_without_the_weights(tmp_path, monkeypatch):
    """A CPU clone holding only the kept folder browses the GPU runs in MLflow as the home machine
    does: the same training runs (params, tags, every step's metrics, the training's own clock) and
    evaluation runs; the arm's model version is registered, marked as holding no weights."""
    from mlflow.tracking import MlflowClient

    from negotiation.agents import Policy, PolicyArch
    from negotiation.pipeline import run_track
    from negotiation.tracking import RECORD_FILE, RecordingTracker

    arm = "w16_shared_init"
    layout = ResultsLayout(write_synthetic_results(load_study("demo").protocol, [arm], tmp_path / "r" / "demo", seed=5).dir)
    layout.metrics(arm).write_text(json.dumps({"S": 0.5, "episodes": 144}), encoding="utf-8")
    weights = layout.train(arm) / "step_8"
    Policy.init(PolicyArch(width=16), 0).save(weights)
    layout.seller(arm).parent.mkdir(parents=True)
    layout.seller(arm).write_text(json.dumps({"seller": f"policy:{weights}", "weights_sha256": "ab" * 32}))
    tracker = RecordingTracker(layout.train(arm) / RECORD_FILE, arm, {"recipe.group_size": "8"},
                               {"arm": arm, "phase": "training", "parent_run": "", "parent_arm": ""})
    for step in (1, 2, 3):
        tracker.log_step(step, {"train/reward": 0.1 * step, "train/kl_penalty": 0.01 * step})
    tracker.finish()

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'home.db'}")
    home = run_track("demo", layout.dir)
    at_home = _metric_histories(MlflowClient(), "negotiation/demo")
    keep_results(layout.dir, tmp_path / "kept" / "demo")
    shutil.rmtree(layout.dir)  # the clone has the kept folder only: no weights anywhere
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'clone.db'}")
    clone = run_track("demo", tmp_path / "kept" / "demo")
    client = MlflowClient()

    assert list(clone["training_runs"]) == list(home["training_runs"]) == [arm]
    assert list(clone["evaluation_runs"]) == list(home["evaluation_runs"]) == [arm]
    in_clone = _metric_histories(client, "negotiation/demo")
    assert in_clone.keys() == at_home.keys() == {(arm, "training"), (arm, "evaluation")}
    assert in_clone[(arm, "training")] == at_home[(arm, "training")]
    assert in_clone[(arm, "training")][2]["train/reward"][-1][:2] == (3, pytest.approx(0.3))
    assert in_clone[(arm, "evaluation")][2].keys() == at_home[(arm, "evaluation")][2].keys()
    (version,) = client.search_model_versions(f"name = '{clone['evaluation_runs'][arm]['registered_model']}'")
    assert version.tags["weights_in_model"] == "false" and version.tags["arm"] == arm
