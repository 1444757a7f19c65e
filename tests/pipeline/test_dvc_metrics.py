"""`dvc metrics show`, `dvc plots show`, `dvc metrics diff` and `dvc exp show` work cleanly on the
demo's declarations: the paper pipeline's absent outputs are not declared as metrics or plots,
every training curve is declared once, and metrics live outside the ignored outputs/ so git (and
`dvc exp run`) can keep a baseline. The stage outputs are written by hand here (the real ones
take the whole demo); what is under test is the DVC wiring."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml
from tests.pipeline.dvc_checkout import checkout_copy, dvc

pytestmark = pytest.mark.slow


def _demo_outputs(copy) -> list[str]:
    plan = yaml.safe_load((copy / "pipelines/plans/demo.yaml").read_text())["plan"]
    curves = copy / "outputs/demo/curves"
    curves.mkdir(parents=True)
    for run in plan["runs"]:
        (curves / f"{run}.csv").write_text("step,train/reward,train/kl_penalty,train/entropy\n"
                                           "1,0.1,0.01,1.2\n2,0.2,0.02,1.1\n")
    metrics = copy / "metrics/demo"
    # The copy carries untracked files, so a checkout that already ran `make repro` brings its
    # real metrics along: replace them with the hand-written ones this test reasons about.
    shutil.rmtree(metrics, ignore_errors=True)
    metrics.mkdir(parents=True)
    for arm in plan["arms"]:
        (metrics / f"{arm}.json").write_text(json.dumps({"S": 0.5, "episodes": 144, "error_rows": 0}))
    (metrics / "analysis.json").write_text(json.dumps({"contrasts": 3}))
    return list(plan["arms"])


def _clean(result) -> str:
    text = result.stdout + result.stderr
    assert result.returncode == 0 and "failed to load" not in text.lower(), text[-3000:]
    return text


def test_metrics_and_plots_show_diff_and_exp_show_are_clean(tmp_path):
    copy = checkout_copy(tmp_path)
    arms = _demo_outputs(copy)
    shown = _clean(dvc(["metrics", "show"], copy))
    assert all(f"metrics/demo/{arm}.json" in shown for arm in arms) and "outputs/paper" not in shown
    _clean(dvc(["plots", "show"], copy))
    html = (copy / "dvc_plots/index.html").read_text()
    assert all(column in html for column in ("train/reward", "train/kl_penalty", "train/entropy"))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    status = subprocess.run(["git", "status", "--porcelain", "metrics"], cwd=copy, capture_output=True, text=True)
    assert "metrics/" in status.stdout  # not ignored: a commit (or `dvc exp run`) keeps them as a baseline
    subprocess.run([*git, "add", "-A"], cwd=copy, check=True)
    subprocess.run([*git, "commit", "-qm", "baseline"], cwd=copy, check=True)
    (copy / f"metrics/demo/{arms[0]}.json").write_text(json.dumps({"S": 0.75, "episodes": 144, "error_rows": 0}))
    diff = _clean(dvc(["metrics", "diff"], copy))
    assert f"metrics/demo/{arms[0]}.json" in diff and "0.75" in diff and "0.25" in diff
    table = _clean(dvc(["exp", "show", "--no-pager", "--md"], copy))
    assert "S" in table and "workspace" in table
