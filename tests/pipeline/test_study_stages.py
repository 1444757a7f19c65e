"""The study-level stages (validate, analyze) read the arms the DVC plan builds: for the ``lm``
study that leaves out the GPU profile's arms, whose tables ``scripts/gpu_profile.py`` writes, so a
fresh ``dvc --cd pipelines/lm repro`` does not stop at validate waiting for them."""

from __future__ import annotations

from negotiation.analysis import write_synthetic_results
from negotiation.pipeline import build_plan, run_analyze, run_validate
from negotiation.study import load_study


def test_lm_stages_read_the_planned_arms_and_not_the_gpu_profile(tmp_path):
    study = load_study("lm")
    gpu_only = study.gpu_profile_arms()
    planned = list(build_plan(study)["plan"]["arms"])
    assert gpu_only and not gpu_only & set(planned)
    assert sorted(planned) == sorted(set(study.arms) - gpu_only)
    results = write_synthetic_results(study.protocol, planned, tmp_path / "results", seed=3).dir

    report = run_validate("lm", results)
    assert report["success"], report["checks"]
    assert sorted(report["tables"]) == sorted(planned)
    summary = run_analyze("lm", results, tmp_path / "analyze", seed=0, resamples=100)
    assert summary["contrasts"] > 0


def test_an_explicit_scope_still_names_gpu_arms(tmp_path):
    study = load_study("lm")
    chosen = sorted(study.gpu_profile_arms() | {n for n, a in study.arms.items() if a.kind == "reference"})
    results = write_synthetic_results(study.protocol, chosen, tmp_path / "results", seed=3).dir
    report = run_validate("lm", results, arms=chosen)
    assert report["success"], report["checks"]
    assert sorted(report["tables"]) == chosen
