"""The MLflow UI shows a token-level run's KL and entropy curves (headless Chromium).

A tiny Llama trained three steps by the token trainer logs to a temporary SQLite store; the
run's model-metrics page must render ``train/kl_penalty`` and ``train/entropy`` charts. The
screenshot is kept under ``test-artifacts/``."""

from __future__ import annotations

import pytest
from mlflow.tracking import MlflowClient
from playwright import sync_api

from negotiation.tracking import experiment_name
from negotiation.training.lm import LmArm, LmRuntime, LmTrainConfig, train_lm_arm
from tests.training.lm.tiny_lm import canned_generator, tiny_protocol, write_tiny_checkpoint

pytestmark = [pytest.mark.slow, pytest.mark.browser]
RUN = "tiny_lm_shared_init"


@pytest.fixture()
def store(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    base = write_tiny_checkpoint(tmp_path / "base")
    cfg = LmTrainConfig(protocol=tiny_protocol(), runtime=LmRuntime(micro_batch_tokens=4096),
                        arm=LmArm(study="lm", arm=RUN, size="w16", base=base, lr_multiple=1.0, steps=3, seed=0))
    train_lm_arm(cfg, tmp_path / "run", generator_factory=canned_generator)
    return uri


def test_token_run_shows_kl_and_entropy_curves(mlflow_server, store, chromium, artifacts):
    server = mlflow_server
    client = MlflowClient(tracking_uri=store)
    experiment = client.get_experiment_by_name(experiment_name("lm"))
    (run,) = client.search_runs([experiment.experiment_id])
    history = client.get_metric_history(run.info.run_id, "train/entropy")
    assert [m.step for m in history] == [1, 2, 3] and all(m.value > 0 for m in history)
    assert run.data.tags["backend"] == "token"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.goto(f"{server}/#/experiments/{experiment.experiment_id}/runs/{run.info.run_id}/model-metrics")
        shot = artifacts / "mlflow-ui-token-kl-entropy.png"
        try:
            search = page.get_by_placeholder("Search metric charts").first
            search.wait_for(timeout=90_000)
            # Charts are grouped by prefix (timing/ first) and drawn lazily: filter them into view.
            search.fill("kl_penalty")
            page.get_by_text("kl_penalty", exact=True).first.wait_for(timeout=60_000)
            search.fill("entropy")
            page.get_by_text("entropy", exact=True).first.wait_for(timeout=60_000)
            page.get_by_text("approx_entropy", exact=True).first.wait_for(timeout=60_000)
            page.wait_for_timeout(2000)  # let the charts draw before the screenshot
        finally:
            page.screenshot(path=str(shot), full_page=True)
            browser.close()
    assert shot.stat().st_size > 10_000
