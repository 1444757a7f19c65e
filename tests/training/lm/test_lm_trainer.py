"""The token-level GRPO trainer on a tiny Llama: checkpoints, curves, determinism, continuation."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from negotiation.registry import list_checkpoint_steps
from negotiation.training import read_training_info
from negotiation.training.lm import LmArm, LmRuntime, LmTrainConfig, train_lm_arm
from tests.training.lm.tiny_lm import canned_generator, tiny_protocol, write_tiny_checkpoint


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return write_tiny_checkpoint(tmp_path_factory.mktemp("base") / "tiny")


def _config(base: Path, steps: int = 2, **arm) -> LmTrainConfig:
    values = dict(study="tiny", arm="tiny_run", size="w16", base=base, lr_multiple=1.0, steps=steps, seed=3)
    return LmTrainConfig(protocol=tiny_protocol(), arm=LmArm(**{**values, **arm}),
                         runtime=LmRuntime(micro_batch_tokens=4096), protocol_hash="abc")


def _train(base: Path, run_dir: Path, **arm):
    return train_lm_arm(_config(base, **arm), run_dir, track=False, generator_factory=canned_generator)


def test_run_writes_hf_checkpoints_curves_and_training_info(base, tmp_path):
    import transformers

    summary = _train(base, tmp_path / "run")
    assert sorted(summary.checkpoints) == [0, 2]
    assert list_checkpoint_steps(tmp_path / "run") == [0, 2]
    step2 = tmp_path / "run" / "step_2"
    for name in ("config.json", "model.safetensors", "generation_config.json", "tokenizer.json",
                 "tokenizer_config.json"):
        assert (step2 / name).is_file(), name
    assert transformers.AutoModelForCausalLM.from_pretrained(step2) is not None
    tok = transformers.AutoTokenizer.from_pretrained(step2)
    assert tok.chat_template and "enable_thinking" in tok.chat_template
    info = read_training_info(step2)
    assert (info.step, info.combined_step, info.consumed_scenarios) == (2, 2, 4)
    assert (step2 / info.base_checkpoint).resolve() == (tmp_path / "run" / "step_0").resolve()
    curves = pd.read_csv(tmp_path / "run" / "curves.csv")
    for key in ("train/reward", "train/kl_penalty", "train/entropy", "train/approx_entropy", "train/lr",
                "train/grad_norm", "train/mean_gen_tokens", "train/bad_parse_rate", "train/group_return_std",
                "train/zero_std_groups", "train/adv_min", "train/adv_p10", "train/adv_p50", "train/adv_p90",
                "train/adv_max", "train/adv_abs_mean"):
        assert curves[key].notna().all(), key
    assert list(curves["step"]) == [1, 2]
    assert curves["train/kl_penalty"].iloc[0] == pytest.approx(0.0, abs=1e-6)  # step 1: policy == base
    assert curves["train/kl_penalty"].iloc[1] > 0  # one AdamW step moved it
    assert (curves["train/entropy"] > 0).all()
    assert 0 < curves["train/bad_parse_rate"].iloc[0] < 1  # the canned malformed turn is counted
    assert sorted(pd.read_csv(tmp_path / "run" / "validation.csv")["step"]) == [0, 2]
    timing = pd.read_csv(tmp_path / "run" / "timing.csv")
    assert (timing["generated_tokens"] > 0).all()


def test_same_seed_gives_identical_curves_and_checkpoints(base, tmp_path):
    _train(base, tmp_path / "a")
    _train(base, tmp_path / "b")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "a" / "curves.csv"), pd.read_csv(tmp_path / "b" / "curves.csv"))
    assert (tmp_path / "a/step_2/model.safetensors").read_bytes() == (tmp_path / "b/step_2/model.safetensors").read_bytes()
    _train(base, tmp_path / "c", seed=4)
    assert (tmp_path / "a/step_2/model.safetensors").read_bytes() != (tmp_path / "c/step_2/model.safetensors").read_bytes()


def test_continuation_keeps_the_base_as_reference_and_restarts_the_schedule(base, tmp_path):
    _train(base, tmp_path / "init")
    summary = _train(base, tmp_path / "cont", arm="tiny_cont", parent=tmp_path / "init" / "step_2",
                     parent_arm="tiny_run")
    assert summary.branch_step == 2
    info = read_training_info(tmp_path / "cont" / "step_2")
    assert (info.combined_step, info.branch_step, info.consumed_scenarios) == (4, 2, 8)
    assert (tmp_path / "cont" / "step_2" / info.base_checkpoint).resolve() == (tmp_path / "init" / "step_0").resolve()
    assert not (tmp_path / "cont" / "step_0").exists()
    curves = pd.read_csv(tmp_path / "cont" / "curves.csv")
    assert list(curves["combined_step"]) == [3, 4]
    assert curves["train/kl_penalty"].iloc[0] > 0  # the reference is the base, not the parent
    first = pd.read_csv(tmp_path / "init" / "curves.csv")
    assert curves["train/lr"].iloc[0] == first["train/lr"].iloc[0]  # warmup restarts


def test_recipe_without_token_caps_is_refused(base):
    protocol = tiny_protocol(sequences=None)
    with pytest.raises(ValueError, match="sequences"):
        LmTrainConfig(protocol=protocol, arm=_config(base).arm)


def test_one_step_with_the_batched_kv_cache_generator(base, tmp_path):
    """The default sampler (negotiation.lm) plays real generated text through the environment."""
    cfg = _config(base, steps=1)
    summary = train_lm_arm(cfg, tmp_path / "run", track=False)
    curves = pd.read_csv(tmp_path / "run" / "curves.csv")
    assert summary.checkpoints == {0: (tmp_path / "run" / "step_0").as_posix(), 1: (tmp_path / "run" / "step_1").as_posix()}
    assert curves["train/mean_gen_tokens"].iloc[0] > 0
    assert curves["train/bad_parse_rate"].iloc[0] == 1.0  # an untrained model writes no valid turn



def test_sampler_and_trainer_log_probs_agree_on_the_sampled_tokens(base, tmp_path):
    """The rollout engine's log-probs (aligned with ``ids``) reach the update: the same weights, the
    same context and mask give the same log-probability of each sampled token (float32 rounding);
    a sampler that reports none (the canned one) logs no gap column."""
    train_lm_arm(_config(base, steps=1), tmp_path / "run", track=False)
    curves = pd.read_csv(tmp_path / "run" / "curves.csv")
    assert 0 <= curves["train/logprob_gap_mean"].iloc[0] < 1e-3
    assert curves["train/logprob_gap_max"].iloc[0] < 1e-2
    _train(base, tmp_path / "canned", steps=1)
    assert "train/logprob_gap_mean" not in pd.read_csv(tmp_path / "canned" / "curves.csv")
