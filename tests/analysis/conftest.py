"""A demo study on disk: a copy of protocol/ and registry/ as a repository root, and a results
directory of synthetic tables for every demo arm (built once per session)."""

import shutil
from pathlib import Path

import pytest

from negotiation.study import default_root


@pytest.fixture(scope="session")
def demo_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("root")
    shutil.copytree(Path(default_root()) / "protocol", root / "protocol")
    if (Path(default_root()) / "registry").exists():
        shutil.copytree(Path(default_root()) / "registry", root / "registry")
    return root


@pytest.fixture(scope="session")
def demo_results(demo_root, tmp_path_factory) -> Path:
    from negotiation.study import load_study
    from negotiation.analysis import write_synthetic_results

    context = load_study("demo", demo_root)
    return write_synthetic_results(context.protocol, list(context.arms), tmp_path_factory.mktemp("results"), 3).dir


@pytest.fixture(scope="session")
def real_results(tmp_path_factory) -> Path:
    """The demo's own pipeline functions run for its two reference arms: scenarios, select, pilot
    and every evaluation episode (scripted sellers, about ten seconds): real tables, built by the
    engine and the harness, not by a generator that writes the identities in."""
    from negotiation.pipeline import run_evaluate_stage, run_pilot_stage, run_scenarios, run_select

    results = tmp_path_factory.mktemp("real") / "outputs" / "demo"
    run_scenarios("demo", results / "scenarios")
    for arm in ("ref_boulware", "ref_conceder"):
        run_select("demo", arm, results)
        assert run_pilot_stage("demo", arm, results, concurrency=4).passed
        run_evaluate_stage("demo", arm, results, concurrency=4)
    return results
