"""From the demo study's protocol to trainer inputs: keys mapped, numbers never retyped."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from pydantic import ValidationError

from negotiation.errors import ConfigError
from negotiation.study import load_study
from negotiation.training import TrainConfig, recipe_problems
from negotiation.training._protocol import (
    final_checkpoint,
    train_config_for,
    training_env,
    training_runs,
    write_initial_policy,
)


@pytest.fixture(scope="module")
def study():
    return load_study("demo")


def test_runs_list_parents_first(study):
    runs = training_runs(study)
    parents = {a.run: a.parent_run for a in study.arms.values() if a.kind == "trained"}
    assert set(runs) == set(parents)
    for run, parent in parents.items():
        if parent is not None:
            assert runs.index(parent) < runs.index(run)


def test_initial_and_continuation_configs(study, tmp_path):
    t = study.protocol.training
    run = next(a for a in study.arms.values() if a.kind == "trained" and a.parent_run is None
               and a.lr_multiple == 3)
    cfg = train_config_for(study, run.run, protocol_hash="h")
    size = study.protocol.sizes[run.size]
    assert (cfg.arm.arch.width, cfg.arm.init_seed, cfg.arm.lr_multiple) == (size.width, size.init_seed, 3)
    assert cfg.arm.steps == t.initial_steps and cfg.arm.parent is None
    assert cfg.recipe is t  # the protocol's own recipe model, not a renamed copy
    block = study.protocol.seeds.training
    assert cfg.data.train_seeds[0] == block.start and cfg.data.validation_seeds[1] == block.stop
    assert cfg.data.train_seeds[1] == cfg.data.validation_seeds[0]
    assert cfg.data.validation_scenarios == study.protocol.training.validation_scenarios == 32
    assert [b.spec for b in cfg.data.buyers] == [b.spec for b in study.protocol.buyers.training]
    cont = next(a for a in study.arms.values() if a.kind == "trained" and a.parent_run)
    ccfg = train_config_for(study, cont.run, parent=tmp_path / "step_64")
    assert ccfg.arm.steps == t.continuation_steps and ccfg.arm.parent_arm == cont.parent_run


def test_parent_rules_and_unknown_runs(study, tmp_path):
    cont = next(a for a in study.arms.values() if a.kind == "trained" and a.parent_run)
    with pytest.raises(ConfigError, match=rf"arms.{cont.run}.parent_run: .* needs the parent's final checkpoint"):
        train_config_for(study, cont.run)
    first = next(a for a in study.arms.values() if a.kind == "trained" and not a.parent_run)
    with pytest.raises(ConfigError, match="has no parent run"):
        train_config_for(study, first.run, parent=tmp_path)
    with pytest.raises(ConfigError, match=r"protocol/demo/arms.yaml:arms: no trained arm has run 'nope'"):
        train_config_for(study, "nope")


def test_recipes_the_trainers_do_not_implement_are_refused(study):
    t = study.protocol.training
    assert recipe_problems(t, tokens=False) == []
    assert recipe_problems(t, tokens=True) == [
        "reward_plumbing: the trainers implement 'front_loaded_floor', got 'terminal'",
        "sequences: a language-model run needs token caps, got null"]
    # both baselines, normalized or not, are implemented (group_advantages)
    assert recipe_problems(t.model_copy(update={"baseline": "group_mean", "normalize_rewards": False}),
                           tokens=False) == []
    other = t.model_copy(update={"continuation_schedule": "resume", "group_size": 2,
                                 "kl": t.kl.model_copy(update={"applied_to": "reward"})})
    assert [p.split(":")[0] for p in recipe_problems(other, tokens=False)] == ["continuation_schedule", "group_size",
                                                                               "kl"]
    run = training_runs(study)[0]
    bad = dataclasses.replace(study, protocol=study.protocol.model_copy(update={"training": other}))
    with pytest.raises(ConfigError, match=r"protocol/demo/protocol.yaml:training.continuation_schedule: the trainers "
                                          r"implement"):
        train_config_for(bad, run)
    with pytest.raises(ValidationError, match="training.continuation_schedule"):
        cfg = train_config_for(study, run)
        TrainConfig(recipe=t.model_copy(update={"continuation_schedule": "resume"}), data=cfg.data, arm=cfg.arm)


def test_training_env_reads_the_training_phase(study):
    env, e = training_env(study.protocol), study.protocol.environment
    assert (env.max_rounds, env.no_deal_penalty, env.t_soft) == (e.max_rounds, e.no_deal_penalty, e.t_soft)
    assert env.accept_applies_terms == e.accept_terms_applied.training and env.phase == "training"


def test_initial_policy_is_every_runs_step_zero(study, tmp_path):
    """Without a ``policy_warm_start`` a size's base is its untrained init (the demo's, with one, is
    tested in test_imitation.py)."""
    from types import SimpleNamespace

    name, size = next((k, v) for k, v in study.protocol.sizes.items() if v.kind == "policy")
    cold = SimpleNamespace(name=study.name, root=study.root,
                           protocol=study.protocol.model_copy(update={"policy_warm_start": None}))
    folder = write_initial_policy(cold, name, tmp_path / "init")
    from negotiation.agents import Policy, PolicyArch

    fresh = Policy.init(PolicyArch(width=size.width), size.init_seed).net.state_dict()
    saved = torch.load(folder / "weights.pt", weights_only=True)
    assert all(torch.equal(fresh[k], saved[k]) for k in fresh)
    with pytest.raises(ConfigError, match="sizes.nope: not a policy size"):
        write_initial_policy(study, "nope", tmp_path / "x")
    with pytest.raises(ConfigError, match="no step_N/ checkpoint"):
        final_checkpoint(tmp_path)


def test_a_gpu_recipe_the_token_trainer_cannot_run_is_one_line_naming_its_section(tmp_path):
    from negotiation.training.lm import lm_train_config_for

    lm = load_study("lm")
    gpu = lm.protocol.gpu_training.model_copy(update={"group_size": 2})
    bad = dataclasses.replace(lm, protocol=lm.protocol.model_copy(update={"gpu_training": gpu}))
    assert (bad.protocol.recipe_key_for("lm_m"), bad.protocol.recipe_key_for("lm_xs")) == ("gpu_training", "training")
    with pytest.raises(ConfigError, match=r"^protocol/lm/protocol.yaml:gpu_training.group_size: the leave-one-out "
                                          r"std needs >= 3, got 2$"):
        lm_train_config_for(bad, "lm_m_shared", bad.arms["lm_m_shared"], base=tmp_path)
