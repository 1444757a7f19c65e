"""One tiny GRPO arm of the lm study end to end, with nothing faked: the study's tokenizer and
smallest size (``lm_xs``) warm-started on a cut corpus, token-level GRPO with the batched KV-cache
generator against the protocol's training buyers, the registry's read rule picking the arm's
checkpoint, and that checkpoint served by ``hf:`` for an evaluation episode.

Slow (about a minute or two on two cores): the lm study's recipe with its batch, steps and turn
cap cut (``tiny_lm_protocol`` cuts the corpus and the warm start).
"""

from __future__ import annotations

import pandas as pd
import pytest

from negotiation.agents import make_agent
from negotiation.env import load_domain, make_scenario, run_episode
from negotiation.ladder import write_base, write_tokenizer
from negotiation.protocol import env_config
from negotiation.registry import list_checkpoint_steps, select_read_point
from negotiation.training import read_training_info
from negotiation.training.lm import LmArm, LmRuntime, LmTrainConfig, train_lm_arm
from tests.conftest import tiny_lm_protocol

pytestmark = pytest.mark.slow


def _cut_recipe(protocol):
    recipe = protocol.training
    sequences = recipe.sequences.model_copy(update={"new_tokens_per_turn": 24})
    cut = recipe.model_copy(update={"group_size": 3, "scenarios_per_step": 1, "episodes_per_step": 3,
                                    "initial_steps": 2, "combined_steps": 2, "validation_scenarios": 1,
                                    "validation_every": 2, "checkpoint_every": 2, "rollout_turns": 3,
                                    "read_points": {"early": 2, "combined": 2}, "sequences": sequences})
    env = protocol.environment.model_copy(update={"max_rounds": 2})
    return protocol.model_copy(update={"training": cut, "environment": env})


def test_a_tiny_grpo_arm_trains_is_read_and_plays(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    protocol = _cut_recipe(tiny_lm_protocol())
    write_tokenizer(protocol, tmp_path / "tokenizer")
    write_base(protocol, "lm_xs", tmp_path / "tokenizer", tmp_path / "lm_xs", log=lambda _: None)
    arm = LmArm(study="lm", arm="lm_xs_shared", size="lm_xs", base=tmp_path / "lm_xs", lr_multiple=1.0,
                steps=protocol.training.initial_steps, seed=0)
    cfg = LmTrainConfig(protocol=protocol, arm=arm, runtime=LmRuntime(micro_batch_tokens=8192, threads=2),
                        protocol_hash="test")
    summary = train_lm_arm(cfg, tmp_path / "run", track=True)

    assert summary.mlflow_run_id and list_checkpoint_steps(tmp_path / "run") == [0, 2]
    curves = pd.read_csv(tmp_path / "run" / "curves.csv")
    assert list(curves["step"]) == [1, 2]
    timing = pd.read_csv(tmp_path / "run" / "timing.csv")  # the default sampler is the rollout engine
    assert (timing["decode_steps"] > 0).all() and timing["live_share"].between(0, 1, inclusive="right").all()
    assert (timing["feed_seconds"] > 0).all()
    for key in ("train/reward", "train/kl_penalty", "train/entropy", "train/bad_parse_rate", "train/mean_gen_tokens"):
        assert curves[key].notna().all(), key
    assert (curves["train/mean_gen_tokens"] > 0).all() and (curves["train/entropy"] > 0).all()

    read = select_read_point(protocol.training.read_points["early"], list_checkpoint_steps(tmp_path / "run"))
    checkpoint = tmp_path / "run" / f"step_{read.step}"
    assert read_training_info(checkpoint).combined_step == 2
    seller = make_agent(f"hf:{checkpoint}?device=cpu&study=lm&max_tokens=24", "seller")
    scenario = make_scenario(load_domain("used_car"), 5000053, protocol.environment.dirichlet_alpha)
    buyer = make_agent(protocol.buyers.evaluation["titfortat"].spec, "buyer")
    episode = run_episode(scenario, seller, buyer, env_config(protocol))
    seller_turns = [t for t in episode.turns if t.role == "seller"]
    assert seller_turns and all(t.reply.tokens_out > 0 for t in seller_turns)
    # A buyer with readable=1 never closes on a seller turn that did not parse.
    if episode.outcome == "deal" and episode.closed_by == "buyer":
        assert episode.turns[-2].ok
