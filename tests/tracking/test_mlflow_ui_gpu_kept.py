"""The MLflow UI over a store made on a CPU clone from a GPU profile's kept records (headless
Chromium): the lm experiment lists the GPU training run whose KL and entropy curves render, and the
Model Registry shows the trained arm's version with its ``@read`` and ``@early`` aliases, marked as
holding no weights. The stand-in GPU folder is synthetic tables plus a recorded training run, kept
by ``keep_results`` and tracked from the kept copy alone, as docs/pipeline.md's round trip does;
the real lm_m build kept in docs/results is tracked the same way."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from playwright import sync_api

from negotiation.analysis import write_synthetic_results
from negotiation.pipeline import keep_results, run_track
from negotiation.study import ResultsLayout, load_study
from negotiation.tracking import RECORD_FILE, RecordingTracker, experiment_name, registered_model_name

pytestmark = [pytest.mark.slow, pytest.mark.browser]
ARMS = ("lm_m_base", "lm_m_shared")
RUN = "lm_m_shared"


def _gpu_results(folder):
    """A GPU results folder as the GPU machine leaves it: tables, selection records, a recorded run."""
    study = load_study("lm", profile="gpu")
    layout = ResultsLayout(write_synthetic_results(study.protocol, list(ARMS), folder, seed=3).dir)
    for arm in ARMS:
        layout.metrics(arm).write_text(json.dumps({"S": 0.5, "episodes": 576}), encoding="utf-8")
        layout.seller(arm).parent.mkdir(parents=True)
        source = "init/lm_m" if arm.endswith("_base") else f"select/{arm}/hf"
        layout.seller(arm).write_text(json.dumps({"seller": f"hf:outputs/lm-gpu/{source}?device=cuda",
                                                  "weights_sha256": "ab" * 32}), encoding="utf-8")
    tracker = RecordingTracker(layout.train(RUN) / RECORD_FILE, RUN, {"recipe.group_size": "8"},
                               {"arm": RUN, "phase": "training", "parent_run": "", "parent_arm": ""})
    for step in range(1, 9):
        tracker.log_step(step, {"train/reward": 0.3 + 0.01 * step, "train/kl_penalty": 0.002 * step,
                                "train/entropy": 1.5 - 0.02 * step})
    tracker.finish()
    return layout


@pytest.fixture()
def store(tmp_path, monkeypatch):
    gpu = _gpu_results(tmp_path / "outputs" / "lm-gpu")
    kept = tmp_path / "docs" / "results" / "tables"
    keep_results(gpu.dir, kept)
    shutil.rmtree(gpu.dir)  # the clone holds the kept copy only
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    tracked = run_track("lm", kept)
    assert list(tracked["training_runs"]) == [RUN] and set(tracked["evaluation_runs"]) == set(ARMS)
    return uri


def test_gpu_runs_from_kept_records_show_curves_and_aliased_versions(mlflow_server, store, chromium, artifacts):
    client = MlflowClient(tracking_uri=store)
    experiment = client.get_experiment_by_name(experiment_name("lm"))
    (run,) = client.search_runs([experiment.experiment_id], "tags.phase = 'training'")
    assert {"train/kl_penalty", "train/entropy", "train/reward"} <= set(run.data.metrics)
    model = registered_model_name("lm", RUN)
    (version,) = client.search_model_versions(f"name = '{model}'")
    assert version.tags["weights_in_model"] == "false" and version.tags["size"] == "lm_m"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{mlflow_server}/#/experiments/{experiment.experiment_id}/runs/{run.info.run_id}/model-metrics")
        for metric in ("train/kl_penalty", "train/entropy"):
            page.get_by_text(f"{RUN} ({metric})").first.wait_for(timeout=60_000)
        page.wait_for_timeout(2000)  # let the charts draw before the screenshot
        page.screenshot(path=str(artifacts / "mlflow-ui-gpu-kept-curves.png"), full_page=True)
        page.goto(f"{mlflow_server}/#/models/{model}")
        page.get_by_text("Version 1").first.wait_for(timeout=60_000)
        for alias in ("read", "early"):
            page.get_by_text(re.compile(rf"@\s*{alias}")).first.wait_for(timeout=60_000)
        page.screenshot(path=str(artifacts / "mlflow-ui-gpu-kept-model.png"), full_page=True)
        browser.close()


KEPT_LM_M = Path(__file__).resolve().parents[2] / "docs" / "results" / "lm-gpu-2026-12-07" / "tables"
"""The real GPU build of lm_m and the reference sellers, as it came home (no weights)."""


@pytest.fixture()
def real_store(tmp_path, monkeypatch):
    kept = tmp_path / "tables"
    shutil.copytree(KEPT_LM_M, kept)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    tracked = run_track("lm", kept)
    assert set(tracked["training_runs"]) == {"lm_m_shared", "lm_m_shared_cont", "lm_m_lr3x"}
    assert set(tracked["evaluation_runs"]) == {"lm_m_base", "lm_m_shared", "lm_m_shared_104", "lm_m_lr3x",
                                               "ref_boulware", "ref_conceder"}
    return uri


def test_the_real_lm_m_build_shows_every_steps_curves_and_the_primary_arms_version(mlflow_server, real_store, chromium,
                                                                                    artifacts):
    client = MlflowClient(tracking_uri=real_store)
    experiment = client.get_experiment_by_name(experiment_name("lm"))
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id], "tags.phase = 'training'")}
    for name, steps in (("lm_m_shared", 64), ("lm_m_shared_cont", 40), ("lm_m_lr3x", 64)):
        for metric in ("train/kl_penalty", "train/entropy", "train/reward", "timing/generated_tokens_per_second"):
            assert len(client.get_metric_history(runs[name].info.run_id, metric)) == steps, (name, metric)
    model = registered_model_name("lm", "lm_m_shared_104")
    (version,) = client.search_model_versions(f"name = '{model}'")
    assert {"combined", "read"} <= set(client.get_model_version(model, version.version).aliases)
    run = runs["lm_m_lr3x"]
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{mlflow_server}/#/experiments/{experiment.experiment_id}/runs/{run.info.run_id}/model-metrics")
        search = page.get_by_placeholder("Search metric charts")  # 38 charts: drawn as they scroll into view
        for metric in ("train/bad_parse_rate", "train/kl_penalty"):
            search.fill(metric)
            page.get_by_text(f"lm_m_lr3x ({metric})").first.wait_for(timeout=60_000)
        page.wait_for_timeout(2000)
        page.screenshot(path=str(artifacts / "mlflow-ui-gpu-lm-m-lr3x-curves.png"), full_page=True)
        page.goto(f"{mlflow_server}/#/models/{model}")
        page.get_by_text("Version 1").first.wait_for(timeout=60_000)
        page.get_by_text(re.compile(r"@\s*combined")).first.wait_for(timeout=60_000)
        browser.close()
