"""Run plans and the generated GRPO YAML, against the paper protocol's numbers (Appendix H, Table 8)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import yaml

from negotiation.env import prompt_hash
from negotiation.errors import ConfigError
from negotiation.study import load_study
from negotiation.training import lr_at
from negotiation.training.nemo import (
    NemoEnvSettings, RunPaths, RunPlan, derive_turn_tags, env_settings, grpo_config, lr_schedule, plan_run, resolve_tracking_uri,
    stop_token_ids, template_kwargs, write_train_config,
)
from tests.training.nemo.chat_fixtures import e_series

PAPER = load_study("paper")
TOKENIZER = e_series()
TAGS = derive_turn_tags(TOKENIZER, template_kwargs(False))
SETTINGS = env_settings("paper", tags=TAGS)


def config_for(plan: RunPlan, tmp_path: Path) -> dict:
    parent = RunPaths.for_run(tmp_path, plan.parent_run) if plan.parent_run else None
    return grpo_config(PAPER, plan, settings=SETTINGS, paths=RunPaths.for_run(tmp_path, plan.run),
                       tracking_uri="sqlite:////abs/mlflow.db", parent_paths=parent,
                       eos_token_id=TOKENIZER.eos_token_id, protocol_hash="abc")


def test_an_arm_names_its_continuation_run_and_its_parent():
    plan = plan_run(PAPER, "e2b_shared_104")
    assert (plan.run, plan.parent_run, plan.size, plan.lr_multiple) == ("e2b_shared_cont", "e2b_shared_init", "e2b", 1)
    # Branch at the parent's final checkpoint (64): 104 - 64 = 40 continued steps from combined step 64.
    assert (plan.parent_step, plan.steps, plan.step_offset) == (64, 40, 64)


def test_a_parent_only_run_is_planned_by_its_name():
    plan = plan_run(PAPER, "31b_shared_init", seed=3)
    assert (plan.arm, plan.run, plan.size, plan.parent_run, plan.steps, plan.step_offset, plan.seed) == \
        (None, "31b_shared_init", "31b", None, 64, 0, 3)


def test_the_56_plus_48_branch_of_appendix_k_and_bad_branches():
    plan = plan_run(PAPER, "12b_shared_104", parent_step=56)
    assert (plan.parent_step, plan.steps, plan.step_offset) == (56, 48, 56)
    with pytest.raises(ConfigError, match="cannot branch at step 60"):
        plan_run(PAPER, "12b_shared_104", parent_step=60)
    with pytest.raises(ConfigError, match="is an initial run"):
        plan_run(PAPER, "12b_shared_init", parent_step=56)


def test_arms_without_a_run_and_unknown_names_are_refused():
    with pytest.raises(ConfigError, match="arms.e2b_base.kind: a base arm has no training run"):
        plan_run(PAPER, "e2b_base")
    with pytest.raises(ConfigError, match="no arm or run 'e3b'.*e2b_shared_init"):
        plan_run(PAPER, "e3b")


def test_initial_run_config_holds_the_recipe(tmp_path):
    cfg = config_for(plan_run(PAPER, "e2b_shared_init"), tmp_path)
    grpo, loss, policy = cfg["grpo"], cfg["loss_fn"], cfg["policy"]
    assert (grpo["num_prompts_per_step"], grpo["num_generations_per_prompt"], grpo["max_num_steps"]) == (16, 8, 64)
    assert grpo["max_rollout_turns"] == 13
    assert grpo["use_leave_one_out_baseline"] is True and grpo["normalize_rewards"] is True
    assert (grpo["val_period"], grpo["val_at_start"], grpo["max_val_samples"], grpo["val_batch_size"]) == (8, True, 64, 64)
    assert (loss["reference_policy_kl_penalty"], loss["reference_policy_kl_type"], loss["use_kl_in_reward"]) == \
        (0.04, "k3", False)
    assert (loss["ratio_clip_min"], loss["ratio_clip_max"], loss["token_level_loss"]) == (0.2, 0.2, True)
    assert policy["model_name"] == "google/gemma-4-E2B-it"
    assert policy["train_global_batch_size"] == 128
    assert policy["optimizer"]["kwargs"]["lr"] == pytest.approx(1e-6)
    assert policy["optimizer"]["kwargs"]["betas"] == [0.9, 0.95]
    assert policy["optimizer"]["kwargs"]["weight_decay"] == 0.01
    assert policy["optimizer"]["name"].endswith("FusedAdam")
    assert policy["optimizer"]["kwargs"]["exp_avg_dtype"] == "torch.bfloat16"
    warmup, cosine, milestones = policy["scheduler"]
    assert warmup["kwargs"] == {"start_factor": 0.2, "end_factor": 1.0, "total_iters": 4}
    assert milestones == {"milestones": [4]}
    assert cosine["kwargs"] == {"T_max": 59, "eta_min": pytest.approx(1e-7)}


def test_sampling_caps_stop_ids_and_per_size_settings(tmp_path):
    cfg = config_for(plan_run(PAPER, "e2b_shared_init"), tmp_path)
    gen = cfg["policy"]["generation"]
    assert (gen["temperature"], gen["top_p"], gen["top_k"], gen["max_new_tokens"]) == (1.0, 0.95, 64, 768)
    assert gen["stop_token_ids"] == [TOKENIZER.encode("<turn|>")[0], TOKENIZER.eos_token_id]
    assert gen["stop_strings"] is None
    assert cfg["policy"]["tokenizer"]["chat_template_kwargs"] == {"enable_thinking": False}
    assert cfg["policy"]["max_total_sequence_length"] == 16384 and cfg["data"]["max_input_seq_length"] == 2048
    assert gen["vllm_cfg"]["gpu_memory_utilization"] == 0.45 and gen["vllm_cfg"]["tensor_parallel_size"] == 1
    big = config_for(plan_run(PAPER, "31b_shared_init"), tmp_path)
    assert big["policy"]["generation"]["vllm_cfg"]["gpu_memory_utilization"] == 0.30
    assert big["policy"]["dtensor_cfg"]["tensor_parallel_size"] == 4 and big["cluster"]["gpus_per_node"] == 4


def test_checkpoints_logger_and_environment(tmp_path):
    cfg = config_for(plan_run(PAPER, "e2b_shared_init"), tmp_path)
    ckpt = cfg["checkpointing"]
    assert ckpt["save_period"] == 8 and ckpt["keep_top_k"] is None and ckpt["model_save_format"] == "torch_save"
    assert ckpt["checkpoint_dir"] == str(tmp_path.resolve() / "e2b_shared_init" / "checkpoints")
    mlflow = cfg["logger"]["mlflow"]
    assert cfg["logger"]["mlflow_enabled"] is True
    assert mlflow == {"experiment_name": "negotiation/paper", "run_name": "e2b_shared_init", "tracking_uri": "sqlite:////abs/mlflow.db"}
    env = cfg["env"]["negotiation"]
    assert env["environment"] == PAPER.protocol.environment.model_dump(mode="json")  # the section itself, not a copy
    engine = NemoEnvSettings.model_validate(env).env_config()
    assert (engine.no_deal_penalty, engine.g_fmt, engine.g_len, engine.t_soft, engine.max_rounds) == (0.3, 0.05, 0.05, 9.0, 12)
    assert engine.accept_applies_terms is True and env["turn_tags"]["generation_prompt"] == "<|turn>model\n"
    assert cfg["negotiation"]["train_scenarios"] == {"offset": 0, "count": 1024}
    assert (env["environment"]["converge_from_turn"], env["prompt_template"]) == (16, "training")
    assert cfg["negotiation"]["prompt_hash"] == prompt_hash("training")
    assert cfg["negotiation"]["prompt_builder"] == "negotiation.env:seller_training_messages"


def test_continuation_restarts_the_schedule_from_the_base_model(tmp_path):
    cfg = config_for(plan_run(PAPER, "e2b_shared_104"), tmp_path)
    assert cfg["grpo"]["max_num_steps"] == 40
    assert cfg["policy"]["scheduler"][1]["kwargs"]["T_max"] == 35
    # The KL reference is whatever setup loads: the base checkpoint, not the parent.
    assert cfg["policy"]["model_name"] == "google/gemma-4-E2B-it"
    root = tmp_path.resolve()
    assert cfg["negotiation"]["parent_weights"] == str(root / "e2b_shared_init" / "checkpoints" / "step_64" / "policy" / "weights")
    # A fresh checkpoint folder: NeMo-RL auto-resumes (and re-pins the reference) from an existing one.
    assert cfg["checkpointing"]["checkpoint_dir"] == str(root / "e2b_shared_cont" / "checkpoints")
    assert cfg["negotiation"]["train_scenarios"] == {"offset": 1024, "count": 640}


def test_lr_multiples_scale_peak_and_floor(tmp_path):
    plan = plan_run(PAPER, "e2b_shared_init").model_copy(update={"lr_multiple": 3.0})
    policy = config_for(plan, tmp_path)["policy"]
    assert policy["optimizer"]["kwargs"]["lr"] == pytest.approx(3e-6)
    assert policy["scheduler"][1]["kwargs"]["eta_min"] == pytest.approx(3e-7)


def _lrs(schedule: list[dict], peak: float, steps: int) -> list[float]:
    """Rate of GRPO steps 0..steps-1, built and stepped the way NeMo-RL does (once per step)."""
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=peak)
    parts = [getattr(torch.optim.lr_scheduler, s["name"].rsplit(".", 1)[1])(optimizer, **s["kwargs"])
             for s in schedule if "name" in s]
    milestones = [s for s in schedule if "milestones" in s]
    scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, parts, milestones[0]["milestones"]) \
        if milestones else parts[0]
    lrs = []
    for _ in range(steps):
        lrs.append(optimizer.param_groups[0]["lr"])
        scheduler.step()  # no optimizer.step(): only the rate matters, and it avoids torch's compile imports
    return lrs


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`")
@pytest.mark.parametrize("steps", [64, 40, 48])
def test_schedule_warms_up_restarts_and_ends_on_the_floor(steps):
    lrs = _lrs(lr_schedule(5, steps, 1e-7), 1e-6, steps)
    assert lrs[0] == pytest.approx(2e-7)  # peak / 5 on the first step of every run, restarts included
    assert lrs[1] == pytest.approx(4e-7)
    assert lrs[4] == pytest.approx(1e-6)  # the peak on the last warmup step
    t = 12
    assert lrs[4 + t] == pytest.approx(1e-7 + 0.9e-6 * (1 + math.cos(math.pi * t / (steps - 5))) / 2)
    assert lrs[steps - 1] == pytest.approx(1e-7)  # the floor on the run's last step
    # The same schedule as the demo trainer's, step for step.
    reference = [lr_at(k, peak=1e-6, floor=1e-7, warmup_steps=5, total_steps=steps) for k in range(steps)]
    assert lrs == pytest.approx(reference, rel=1e-9, abs=1e-18)


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`")
def test_one_warmup_step_is_the_peak_then_cosine():
    lrs = _lrs(lr_schedule(1, 10, 0.0), 1.0, 10)
    assert lrs == pytest.approx([lr_at(k, peak=1.0, floor=0.0, warmup_steps=1, total_steps=10) for k in range(10)])


def test_schedule_without_warmup_and_impossible_warmup():
    assert lr_schedule(0, 10, 0.0) == [{"name": "torch.optim.lr_scheduler.CosineAnnealingLR",
                                        "kwargs": {"T_max": 10, "eta_min": 0.0}}]
    with pytest.raises(ConfigError, match="warmup_steps: 8 must be below the run's 8 steps"):
        lr_schedule(8, 8, 0.0)


def test_stop_token_ids_skip_a_repeated_eos():
    assert stop_token_ids(TAGS, 2) == [TAGS.end_of_turn_id, 2]
    assert stop_token_ids(TAGS, TAGS.end_of_turn_id) == [TAGS.end_of_turn_id]
    assert stop_token_ids(TAGS, None) == [TAGS.end_of_turn_id]


def test_demo_sizes_are_not_nemo_rl_runs(tmp_path):
    demo = load_study("demo")
    plan = plan_run(demo, "w16_lr3x")
    with pytest.raises(ConfigError, match="sizes.w16.kind: 'policy'"):
        grpo_config(demo, plan, settings=env_settings("demo", tags=TAGS), paths=RunPaths.for_run(tmp_path, plan.run),
                    tracking_uri="sqlite:////x.db")


def test_the_yaml_reads_back(tmp_path):
    cfg = config_for(plan_run(PAPER, "e4b_shared_104"), tmp_path)
    path = write_train_config(cfg, tmp_path / "a" / "grpo.yaml")
    assert path.read_text().startswith("# NeMo-RL GRPO config generated")
    assert yaml.safe_load(path.read_text()) == cfg


def test_tracking_uri_resolution(tmp_path):
    assert resolve_tracking_uri({}, cwd=tmp_path) == f"sqlite:///{tmp_path}/mlflow.db"
    assert resolve_tracking_uri({"MLFLOW_TRACKING_URI": "sqlite:///runs/m.db"}, cwd=tmp_path) == \
        f"sqlite:///{tmp_path}/runs/m.db"
    assert resolve_tracking_uri({"MLFLOW_TRACKING_URI": "sqlite:////a/m.db"}) == "sqlite:////a/m.db"
    assert resolve_tracking_uri({"MLFLOW_TRACKING_URI": "http://mlflow:5000"}) == "http://mlflow:5000"
    for file_store in ("file:///tmp/mlruns", "mlruns"):
        with pytest.raises(ConfigError, match="is a file store"):
            resolve_tracking_uri({"MLFLOW_TRACKING_URI": file_store})
