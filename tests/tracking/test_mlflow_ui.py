"""The MLflow UI over a demo store, in headless Chromium: the study's experiment lists a
training run whose ``train/kl_penalty`` chart renders, and the Model Registry shows an evaluated
arm's registered model. The screenshot is kept under
``test-artifacts/`` for a reader to look at."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import json

import pandas as pd

from negotiation.pipeline import run_track
from negotiation.study import ResultsLayout
from negotiation.tracking import experiment_name, registered_model_name
from negotiation.training import train_arm
from tests.training.tiny_setup import ENV, tiny_config

pytestmark = [pytest.mark.slow, pytest.mark.browser]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"mlflow server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"{url} not healthy after {timeout}s")


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


@pytest.fixture()
def server(store, tmp_path):
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", store, "--host", "127.0.0.1",
         "--port", str(port), "--workers", "1", "--default-artifact-root", str(tmp_path / "artifacts")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_training_run_shows_its_kl_penalty_chart(server, store):
    sync_api = pytest.importorskip("playwright.sync_api") if not os.environ.get("CI") else __import__(
        "playwright.sync_api", fromlist=["sync_playwright"])
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium (scripts/system-deps.sh)")
        pytest.skip("needs Debian's chromium")
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=store)
    experiment = client.get_experiment_by_name(experiment_name("demo"))
    (run,) = client.search_runs([experiment.experiment_id], "tags.phase = 'training'")
    assert "train/kl_penalty" in run.data.metrics
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        # MLflow 3 opens an experiment on its GenAI overview; training runs are under /runs.
        page.goto(f"{server}/#/experiments/{experiment.experiment_id}/runs")
        page.get_by_text("w8_shared_init").first.wait_for(timeout=60_000)
        page.goto(f"{server}/#/experiments/{experiment.experiment_id}/runs/{run.info.run_id}/model-metrics")
        chart_title = page.get_by_text("w8_shared_init (train/kl_penalty)").first
        chart_title.wait_for(timeout=60_000)
        page.wait_for_timeout(2000)  # let the chart draw before the screenshot
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / "mlflow-ui-kl-penalty.png"
        page.screenshot(path=str(shot), full_page=True)
        # The Model Registry: the evaluated arm is a registered model whose version 1 is its seller.
        model = registered_model_name("demo", "ref_boulware")
        page.goto(f"{server}/#/models/{model}")
        page.get_by_text("Version 1").first.wait_for(timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "mlflow-ui-registered-model.png"), full_page=True)
        browser.close()
    assert shot.stat().st_size > 10_000
