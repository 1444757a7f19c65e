"""The MLflow UI over a demo store, in headless Chromium: the study's experiment lists a
training run whose ``train/kl_penalty`` chart renders, and the Model Registry shows an evaluated
arm's registered model with its ``@read`` alias. The screenshot is kept under
``test-artifacts/`` for a reader to look at."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from playwright import sync_api

from negotiation.pipeline import run_track
from negotiation.study import ResultsLayout
from negotiation.tracking import experiment_name, registered_model_name
from negotiation.training import train_arm
from tests.training.tiny_setup import ENV, tiny_config

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@pytest.fixture()
def store(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    train_arm(tiny_config(steps=4, study="demo", arm="w8_shared_init"), ENV, tmp_path / "run")
    layout = ResultsLayout(tmp_path / "outputs/demo")  # one evaluated arm, so the registry has a model
    out = layout.dir / "evaluate/ref_boulware"
    out.mkdir(parents=True)
    pd.DataFrame({"arm": "ref_boulware", "S": [0.5, 0.7]}).to_parquet(out / "episodes.parquet", index=False)
    (out / "metrics.json").write_text(json.dumps({"S": 0.6, "episodes": 2}))
    layout.seller("ref_boulware").parent.mkdir(parents=True)
    layout.seller("ref_boulware").write_text(json.dumps({"seller": "scripted:boulware", "weights_sha256": None}))
    run_track("demo", layout.dir)
    return uri


def test_training_run_shows_its_kl_penalty_chart(mlflow_server, store, chromium, artifacts):
    server = mlflow_server
    client = MlflowClient(tracking_uri=store)
    experiment = client.get_experiment_by_name(experiment_name("demo"))
    (run,) = client.search_runs([experiment.experiment_id], "tags.phase = 'training'")
    assert "train/kl_penalty" in run.data.metrics
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        # MLflow 3 opens an experiment on its GenAI overview; training runs are under /runs.
        page.goto(f"{server}/#/experiments/{experiment.experiment_id}/runs")
        page.get_by_text("w8_shared_init").first.wait_for(timeout=60_000)
        page.goto(f"{server}/#/experiments/{experiment.experiment_id}/runs/{run.info.run_id}/model-metrics")
        chart_title = page.get_by_text("w8_shared_init (train/kl_penalty)").first
        chart_title.wait_for(timeout=60_000)
        page.wait_for_timeout(2000)  # let the chart draw before the screenshot
        shot = artifacts / "mlflow-ui-kl-penalty.png"
        page.screenshot(path=str(shot), full_page=True)
        # The Model Registry: the evaluated arm is a registered model whose version 1 is its seller,
        # aliased @read (the version the arm is evaluated with).
        model = registered_model_name("demo", "ref_boulware")
        page.goto(f"{server}/#/models/{model}")
        page.get_by_text("Version 1").first.wait_for(timeout=60_000)
        page.get_by_text(re.compile(r"@\s*read")).first.wait_for(timeout=60_000)
        page.screenshot(path=str(artifacts / "mlflow-ui-registered-model.png"), full_page=True)
        browser.close()
    assert shot.stat().st_size > 10_000
