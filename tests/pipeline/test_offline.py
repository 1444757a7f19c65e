"""The GPU profile's DVC stages and their round trip: run without what the GPU machine lacks, bring home, commit.

The stand-in for a GPU stage is the GPU pipeline's own reference-seller stages (``select``,
``pilot``, ``evaluate`` of ``ref_boulware``) and ``scenarios``: the same stage scripts, commands
and ledger as ``init@lm_m`` or ``train@lm_m_shared``, at seconds of CPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from negotiation.pipeline import DEVICE_STAGES, build_plan, commit_command, stage_commands
from negotiation.study import default_root, load_study
from tests.pipeline.dvc_checkout import addresses, checkout_copy, dvc, stage_body, stage_env

ROOT = default_root()
GPU_FILE = Path("pipelines/lm/gpu/dvc.yaml")
BLOCKER = """import sys
class _Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("mlflow", "dvc", "litellm", "omegaconf", "great_expectations", "negmas"):
            raise ImportError(f"No module named {name!r} (blocked: the GPU machine has none)")
sys.meta_path.insert(0, _Absent())
"""


def _script(cmd: str) -> str:
    return cmd.split()[1]


def test_gpu_profile_stages_are_the_cpu_profiles_stage_scripts_over_their_own_folder():
    gpu = stage_commands(ROOT / GPU_FILE)
    cpu = stage_commands(ROOT / "pipelines/lm/dvc.yaml")
    assert {_script(c.cmd) for c in gpu} == {_script(c.cmd) for c in cpu}
    study = load_study("lm")
    names = {c.name for c in gpu}
    assert {f"train@{study.arms[a].run}" for a in study.gpu_profile_arms() if study.arms[a].kind == "trained"} <= names
    assert {f"evaluate@{a}" for a in study.gpu_profile_arms()} <= names
    assert all("outputs/lm-gpu" in c.cmd for c in gpu if c.group in DEVICE_STAGES)
    plan = build_plan(study, profile="gpu")["plan"]
    assert set(plan["arms"]) == study.gpu_profile_arms() | {"ref_boulware", "ref_conceder"}
    assert plan["runs"]["lm_m_shared"]["steps"] == study.protocol.gpu_training.initial_steps


def test_gpu_outputs_that_cost_gpu_hours_persist():
    where = addresses(ROOT, str(GPU_FILE))
    for name in ("init@lm_m", "train@lm_m_shared", "pilot@lm_m_shared", "evaluate@lm_m_shared"):
        outs = stage_body(ROOT, where[name])["outs"]
        persisted = [o for o in outs if isinstance(o, dict) and any(v.get("persist") for v in o.values())]
        assert persisted, name


def test_fresh_clone_lists_the_gpu_stages_and_cpu_repro_never_reaches_them(tmp_path):
    repo = checkout_copy(tmp_path / "clone")
    # The lm study is its own DVC project: the root's bare status never lists its stages.
    root_status = dvc(["status"], repo).stdout
    assert "scenarios:" in root_status and not any(p in root_status for p in ("pipelines/lm/", "outputs/lm"))
    arm_file = "gpu/arms/lm_m_shared/dvc.yaml"
    status = dvc(["--cd", "pipelines/lm", "status", arm_file], repo)
    assert status.returncode == 0, status.stderr
    assert f"{arm_file}:train@lm_m_shared" in status.stdout
    listed = dvc(["--cd", "pipelines/lm", "stage", "list", "gpu/dvc.yaml"], repo, COLUMNS="300")
    assert "scripts/gpu_profile.py run" in listed.stdout
    # What `dvc --cd pipelines/lm repro` would run: its stages and everything upstream of them.
    from dvc.repo import Repo
    from dvc.repo.reproduce import get_active_graph, plan_repro

    project = repo / "pipelines/lm"
    with Repo(str(project)) as dvc_repo:
        graph = get_active_graph(dvc_repo.index.graph)
        lm = [s for s in graph if Path(s.path) == project / "dvc.yaml"]
        planned = plan_repro(graph, lm)
    files = {Path(s.path).relative_to(project).as_posix() for s in planned}
    assert "dvc.yaml" in files and "arms/lm_xs_base/dvc.yaml" in files
    assert all(f == "dvc.yaml" or f.startswith("arms/") for f in files), files
    assert "evaluate" in {s.name for s in planned if "lm_xs_base" in s.path}


@pytest.mark.slow
def test_round_trip_without_dvc_or_mlflow_then_commit_leaves_dvc_status_clean(tmp_path):
    repo = checkout_copy(tmp_path / "clone")
    blocker = tmp_path / "gpu-machine"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    gpu_env = {**stage_env(repo), "PYTHONPATH": f"{blocker}{os.pathsep}{repo}"}
    gpu_env.pop("MLFLOW_TRACKING_URI")
    probe = subprocess.run([sys.executable, "-c", "import mlflow"], env=gpu_env, capture_output=True, text=True)
    assert "blocked" in probe.stderr
    # On the GPU machine: the stand-in's device stages, no DVC, no MLflow.
    run = [sys.executable, "scripts/gpu_profile.py", "run", "--stages", "scenarios", "*@ref_boulware"]
    done = subprocess.run(run, cwd=repo, env=gpu_env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ran 4 stage(s)" in done.stderr
    episodes = repo / "outputs/lm-gpu/evaluate/ref_boulware/episodes.parquet"
    stamp = episodes.stat().st_mtime_ns
    # A second call skips what the ledger holds.
    again = subprocess.run(run, cwd=repo, env=gpu_env, capture_output=True, text=True, timeout=600)
    assert "ran 0 stage(s)" in again.stderr
    # Home: commit what came back; status is clean and repro reruns nothing.
    argv = commit_command(GPU_FILE, repo)
    assert argv[:5] == ["dvc", "--cd", "pipelines/lm", "commit", "-f"]
    targets = argv[5:]
    assert [t.split(":")[-1] for t in targets] == ["scenarios", "select", "pilot", "evaluate"]
    assert targets[1] == "gpu/arms/ref_boulware/dvc.yaml:select"
    commit = subprocess.run([sys.executable, "scripts/gpu_profile.py", "commit"], cwd=repo, env=stage_env(repo),
                            capture_output=True, text=True, timeout=600)
    assert commit.returncode == 0, commit.stderr[-3000:]
    status = dvc(["--cd", "pipelines/lm", "status", *targets], repo)
    assert status.returncode == 0 and "up to date" in status.stdout, status.stdout
    repro = dvc(["--cd", "pipelines/lm", "repro", *targets], repo)
    assert repro.returncode == 0, repro.stderr
    assert "Running stage" not in repro.stdout
    assert episodes.stat().st_mtime_ns == stamp


def test_the_gpu_machine_wheels_are_the_locks_pins():
    """``scripts/gpu_wheels.sh`` downloads pydantic and its imports at requirements.lock's versions."""
    dry = subprocess.run(["bash", "scripts/gpu_wheels.sh", "--dry", "/tmp/w", "3.12"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split()
    lock = dict(line.split("==") for line in (ROOT / "requirements.lock").read_text().splitlines() if "==" in line)
    pins = [word for word in dry if "==" in word]
    assert {p.split("==")[0] for p in pins} == {"pydantic", "pydantic-core", "annotated-types", "typing-inspection",
                                                 "typing-extensions"}
    assert all(lock[name] == version for name, version in (p.split("==") for p in pins))
    assert dry[dry.index("--python-version") + 1] == "3.12" and dry[dry.index("--dest") + 1] == "/tmp/w"
