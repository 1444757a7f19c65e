"""``gpu_evaluation``: the GPU profile's own evaluation design, read through ``Protocol.for_profile``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from negotiation.errors import ConfigError
from negotiation.study import load_study

PROTOCOL = "protocol/lm/protocol.yaml"
GPU_PIPELINE = Path("pipelines/lm/gpu")
REPLACED = ("seeds.evaluation", "seeds.held_out_extension", "evaluation", "guards", "held_out_doubling")


def test_the_gpu_profile_reads_its_own_design_and_shares_the_rest():
    cpu, gpu = load_study("lm"), load_study("lm", profile="gpu")
    assert (cpu.protocol.evaluation.seeds_per_domain, gpu.protocol.evaluation.seeds_per_domain) == (2, 32)
    assert gpu.protocol.seeds.evaluation.size == 32 and gpu.protocol.evaluation.episodes_per_arm == 576
    assert gpu.protocol.evaluation.held_out_episodes_per_arm >= 32
    assert gpu.protocol.guards.parse_rate.max_increase > cpu.protocol.guards.parse_rate.max_increase
    assert gpu.protocol.held_out_doubling.trigger_size == "lm_xl"
    assert gpu.protocol.seed_overlaps() == []
    for shared in ("environment", "domains", "buyers", "sampling", "statistics", "pilot_gate", "gpu_training"):
        assert getattr(gpu.protocol, shared) == getattr(cpu.protocol, shared), shared
    assert gpu.protocol.seeds.training == cpu.protocol.seeds.training
    # The CPU block's seeds are the GPU block's first: the two profiles' cells pair on them.
    assert set(cpu.protocol.seeds.evaluation.seeds()) <= set(gpu.protocol.seeds.evaluation.seeds())


def test_a_study_without_a_gpu_design_reads_its_own_in_every_profile():
    demo = load_study("demo")
    assert demo.protocol.gpu_evaluation is None and demo.protocol.gpu_training is None
    assert demo.protocol.for_profile("gpu") is demo.protocol
    for key in ("evaluation.seeds_per_domain", "training.read_points"):
        assert demo.protocol.key_for("gpu", key) == key


@pytest.mark.parametrize(("key", "gpu_key"), [
    ("evaluation", "gpu_evaluation.evaluation"),
    ("evaluation.seeds_per_domain", "gpu_evaluation.evaluation.seeds_per_domain"),
    ("seeds.evaluation", "gpu_evaluation.seeds.evaluation"),
    ("guards.parse_rate.max_increase", "gpu_evaluation.guards.parse_rate.max_increase"),
    ("seeds.pilot", "seeds.pilot"),
    ("seeds.training", "seeds.training"),
    ("evaluation_notes", "evaluation_notes"),
    ("pilot_gate", "pilot_gate"),
    ("training", "gpu_training"),
    ("training.read_points", "gpu_training.read_points"),
    ("training_notes", "training_notes"),
])
def test_key_for_names_the_key_the_file_holds(key, gpu_key):
    protocol = load_study("lm").protocol
    assert protocol.key_for("gpu", key) == gpu_key
    assert protocol.key_for("cpu", key) == key


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("    episodes_per_arm: 576", "    episodes_per_arm: 570",
     f"{PROTOCOL}:gpu_evaluation.evaluation.episodes_per_arm: 570 != 576"),
    ("    held_out_extension: {start: 5000032, stop: 5000064}", "    held_out_extension: {start: 5000032, stop: 5000040}",
     f"{PROTOCOL}:gpu_evaluation.seeds.held_out_extension: 8 != 32"),
    ("    trigger_size: lm_xl", "    trigger_size: lm_xxl", f"{PROTOCOL}:gpu_evaluation.held_out_doubling.trigger_size"),
    ("    parse_rate: {max_increase: 0.012}", "    parse_rate: {max_increase: -1}",
     f"{PROTOCOL}:gpu_evaluation.guards.parse_rate.max_increase: Input should be greater than or equal to 0"),
])
def test_a_gpu_design_that_does_not_add_up_names_its_own_key(root, edit, old, new, expected):
    edit(root / PROTOCOL, old, new)
    with pytest.raises(ConfigError) as info:
        load_study("lm", root)
    assert expected in str(info.value)


def test_an_unknown_profile_is_refused_naming_the_known_ones():
    with pytest.raises(ConfigError, match=r"--profile:tpu: not a profile; known: \['cpu', 'gpu'\]"):
        load_study("lm", profile="tpu")


def test_results_read_in_the_profile_that_evaluated_them(tmp_path):
    study = load_study("lm")
    assert study.results_profile(tmp_path) == "cpu"
    (tmp_path / "evaluate" / "ref_boulware").mkdir(parents=True)
    assert study.results_profile(tmp_path) == "cpu"  # reference sellers are evaluated in both
    (tmp_path / "evaluate" / "lm_m_base").mkdir()
    assert study.results_profile(tmp_path) == "gpu"
    run_only = tmp_path / "run_only"
    (run_only / "train" / "lm_xl_shared_cont").mkdir(parents=True)  # a GPU run, nothing evaluated yet
    assert study.results_profile(run_only) == "gpu"
    assert study.results_profile(study.root / "outputs" / "lm-gpu") == "gpu"  # the GPU folder, even empty
    assert load_study("demo").results_profile(tmp_path) == "cpu"  # no GPU profile at all
    gpu = study.in_profile("gpu")
    assert gpu.profile == "gpu" and gpu.protocol.evaluation.seeds_per_domain == 32
    assert gpu.in_profile("gpu") is gpu
    with pytest.raises(ValueError, match="loaded for profile 'gpu' cannot read 'cpu'"):
        gpu.in_profile("cpu")


def _stage_bodies(path: Path):
    for stage in yaml.safe_load(path.read_text(encoding="utf-8"))["stages"].values():
        yield stage["do"] if "foreach" in stage else stage


def test_every_gpu_stage_reads_the_gpu_design_and_lists_its_keys():
    files = [GPU_PIPELINE / "dvc.yaml", *sorted(GPU_PIPELINE.glob("arms/*/dvc.yaml"))]
    bodies = [body for path in files for body in _stage_bodies(path)]
    assert len(bodies) > 20
    listed = set()
    for body in bodies:
        assert "--study lm --profile gpu " in body["cmd"], body["cmd"]
        for params in body.get("params", []):
            for file, keys in (params.items() if isinstance(params, dict) else ()):
                if file.endswith(PROTOCOL):
                    listed |= set(keys)
    assert not [k for k in listed if any(k == r or k.startswith(r + ".") for r in (*REPLACED, "training"))]
    assert {"gpu_evaluation.seeds.evaluation", "gpu_evaluation.evaluation", "gpu_training",
            "gpu_training.read_points"} <= listed


def test_gpu_continuations_branch_on_the_gpu_recipe():
    """A GPU size's continuation branches at gpu_training's initial_steps and trains to its combined
    steps (the CPU recipe's 4 and 6 once leaked in), as its read points do."""
    study = load_study("lm")
    gpu = study.protocol.gpu_training
    for size in ("lm_m", "lm_l", "lm_xl"):
        branch = study.branches()[f"{size}_shared_cont"]
        assert (branch.branch_step, branch.steps) == (gpu.initial_steps, gpu.combined_steps - gpu.initial_steps)
        assert study.read_step(f"{size}_shared_104") == gpu.combined_steps
    assert study.read_step("lm_xs_shared") == study.protocol.training.read_points["early"]
