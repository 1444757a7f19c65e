"""The MLflow UI shows a token-level run's KL and entropy curves (headless Chromium).

A tiny Llama trained three steps by the token trainer logs to a temporary SQLite store; the
run's model-metrics page must render ``train/kl_penalty`` and ``train/entropy`` charts. The
screenshot is kept under ``test-artifacts/``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("transformers")

from negotiation.tracking import experiment_name  # noqa: E402
from negotiation.training.lm import LmArm, LmRuntime, LmTrainConfig, train_lm_arm  # noqa: E402
from tests.tracking.test_mlflow_ui import ARTIFACTS, CHROMIUM, _free_port, _wait_healthy  # noqa: E402
from tests.training.lm.tiny_lm import canned_generator, tiny_protocol, write_tiny_checkpoint  # noqa: E402

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
        proc.wait(timeout=120)


def test_token_run_shows_kl_and_entropy_curves(server, store):
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium (scripts/system-deps.sh)")
        pytest.skip("needs Debian's chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=store)
    experiment = client.get_experiment_by_name(experiment_name("lm"))
    (run,) = client.search_runs([experiment.experiment_id])
    history = client.get_metric_history(run.info.run_id, "train/entropy")
    assert [m.step for m in history] == [1, 2, 3] and all(m.value > 0 for m in history)
    assert run.data.tags["backend"] == "token"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.goto(f"{server}/#/experiments/{experiment.experiment_id}/runs/{run.info.run_id}/model-metrics")
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / "mlflow-ui-token-kl-entropy.png"
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
