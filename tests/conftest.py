"""Fixtures shared by the test packages: a private copy of the protocol and registry data, safe to tamper with."""

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

from negotiation.study import default_root

REPO = default_root()


def _copy_study_data(target: Path) -> Path:
    for part in ("protocol", "registry"):
        shutil.copytree(REPO / part, target / part, ignore=shutil.ignore_patterns("*.pyc", "__pycache__"))
    return target


@pytest.fixture
def committed_root(tmp_path: Path) -> Path:
    """``tmp_path`` holding protocol/ (domains, demo, paper) and registry/ exactly as committed."""
    return _copy_study_data(tmp_path)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """``tmp_path`` holding protocol/ and registry/ as committed, except that the demo's deviation
    log starts empty: its one entry and the exploratory buyer panel it covers are left out, so a
    test writes entries from id 1 (``committed_root`` keeps them)."""
    _copy_study_data(tmp_path)
    demo = tmp_path / "registry" / "demo"
    (demo / "panel.yaml").unlink()
    for path in (demo / "deviations").glob("*.yaml"):
        path.unlink()
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.fixture
def edit():
    """``edit(path, old, new)``: replace the one exact occurrence of ``old`` in a file."""
    return _edit


def tiny_lm_protocol():
    """The lm study's protocol with a corpus cut to one persona and one seed per domain, so a
    tokenizer trains in about a second (the shapes and the template are the study's own)."""
    from negotiation.study import load_study

    protocol = load_study("lm").protocol
    corpus = protocol.warm_start.corpus.model_copy(update={
        "sellers": protocol.warm_start.corpus.sellers[:1], "train_seeds_per_domain": 1,
        "validation_seeds_per_domain": 1})
    recipe = protocol.warm_start.model_copy(update={
        "corpus": corpus, "steps": 2, "batch_sequences": 2, "warmup_steps": 1, "validation_every": 2,
        "validation_chats": 2})
    return protocol.model_copy(update={"warm_start": recipe})


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Hugging Face folder holding the lm study's smallest size (``lm_xs``), untrained, with a
    tokenizer trained on a cut corpus: what ``hf:``/``vllm:`` sellers and trainers load. Built
    once per test session in a few seconds; treat it as read-only (copy it to change it)."""
    from negotiation.ladder import write_base, write_tokenizer

    protocol = tiny_lm_protocol()
    base = tmp_path_factory.mktemp("tiny_lm")
    write_tokenizer(protocol, base / "tokenizer")
    write_base(protocol, "lm_xs", base / "tokenizer", base / "lm_xs", steps=0)
    return base / "lm_xs"


# --- headless Chromium and the MLflow UI (browser tests: `-m browser`, run by CI's slow phase) ---
ARTIFACTS = REPO / "test-artifacts"


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium for playwright: CI must have it (scripts/system-deps.sh); elsewhere the
    browser tests skip without it."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium (scripts/system-deps.sh)")
        pytest.skip("needs Debian's chromium")
    return path


@pytest.fixture
def artifacts() -> Path:
    """``test-artifacts/``: screenshots kept for a reader to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


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


@pytest.fixture
def mlflow_server(store: str, tmp_path: Path):
    """URL of an MLflow server over the test module's ``store`` fixture (a tracking URI)."""
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
