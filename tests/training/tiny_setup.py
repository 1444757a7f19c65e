"""A tiny training setup shared by the trainer tests (seconds on two cores)."""

from __future__ import annotations

from negotiation.agents import PolicyArch
from negotiation.env import EnvConfig
from negotiation.protocol import Recipe
from negotiation.study import load_study
from negotiation.training import ArmTraining, BuyerShare, TrainConfig, TrainData

ENV = EnvConfig(max_rounds=4, no_deal_penalty=0.3, g_fmt=0.05, g_len=0.05, t_soft=3.0,
                accept_applies_terms=True, phase="training")


def tiny_recipe(**overrides) -> Recipe:
    """The demo protocol's recipe at a few seconds' scale, validated by the protocol's model."""
    values = dict(group_size=3, scenarios_per_step=2, episodes_per_step=6, learning_rate=3e-3, lr_floor=3e-4,
                  warmup_steps=1, validation_every=2, checkpoint_every=2, read_points={})
    return Recipe.model_validate({**load_study("demo").protocol.training.model_dump(), **values, **overrides})


def tiny_data(**overrides) -> TrainData:
    values = dict(domains=("job_offer", "media_rights"), train_seeds=(0, 50),
                  validation_seeds=(50, 60), validation_scenarios=2,
                  buyers=(BuyerShare(spec="scripted:boulware?e=0.2", weight=0.8),
                          BuyerShare(spec="scripted:conceder?e=2.0", weight=0.2)),
                  dirichlet_alpha=0.3)
    return TrainData(**{**values, **overrides})


def tiny_config(steps: int = 3, **arm_overrides) -> TrainConfig:
    arm = dict(study="tiny", arm="w8", arch=PolicyArch(width=8), lr_multiple=1.0, steps=steps, init_seed=1, seed=2)
    return TrainConfig(recipe=tiny_recipe(), data=tiny_data(),
                       arm=ArmTraining(**{**arm, **arm_overrides}), protocol_hash="abc123")
