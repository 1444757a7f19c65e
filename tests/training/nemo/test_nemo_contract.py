"""Contract tests against an installed NeMo-RL; skipped cleanly where it is not installed."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

nemo_rl = pytest.importorskip("nemo_rl")

from nemo_rl.environments.interfaces import EnvironmentInterface, EnvironmentReturn  # noqa: E402

from negotiation.study import load_study
from negotiation.training.nemo import (  # noqa: E402
    EpisodeState, RunPaths, StepOutcome, build_datums, derive_turn_tags, env_settings, environment_class,
    grpo_config, plan_run, template_kwargs, to_environment_return, training_scenarios,
)
from negotiation.training.nemo._launch import _merged_config  # noqa: E402
from tests.training.nemo.chat_fixtures import e_series  # noqa: E402

TAGS = derive_turn_tags(e_series(), template_kwargs(False))
SETTINGS = env_settings("paper", tags=TAGS)


def test_step_outcome_has_the_fields_of_environment_return_in_order():
    assert [f.name for f in dataclasses.fields(StepOutcome)] == list(EnvironmentReturn._fields)


def test_the_environment_is_an_environment_interface_and_steps():
    cls = environment_class()
    assert issubclass(cls, EnvironmentInterface)
    env = cls(SETTINGS.model_dump(mode="json"))
    state = EpisodeState(domain="acquisition", seed=3, buyer="scripted:boulware", sample_seed=3)
    text = 'Hi.\n{"action": "COUNTER", "terms": [{"name": "purchase_price", "value": 90}]}'
    out = env.step([[{"role": "user", "content": "p"}, {"role": "assistant", "content": text}]],
                   [state.model_dump(mode="json")])
    assert isinstance(out, EnvironmentReturn)
    assert out.rewards.tolist() == pytest.approx([-0.3]) and out.terminateds.tolist() == [False]
    assert out.observations[0]["content"].startswith(TAGS.after_end_of_turn + TAGS.user_open)
    batch, metrics = env.global_post_process_and_metrics({"total_reward": out.rewards})
    assert metrics["mean_return"] == pytest.approx(-0.3)


def test_to_environment_return_types():
    outcome = StepOutcome([{"role": "user", "content": ""}], [{}], [None], [0.5], [True], ["deal"])
    ret = to_environment_return(outcome)
    assert str(ret.rewards.dtype) == "torch.float32" and str(ret.terminateds.dtype) == "torch.bool"


def test_datums_collate_with_nemo_rl():
    from nemo_rl.data.collate_fn import rl_collate_fn

    protocol = load_study("paper").protocol
    datums = build_datums(training_scenarios(protocol, offset=0, count=2, seed=0), tokenizer=e_series(),
                          prompt_builder=lambda view: [{"role": "user", "content": "Open."}], settings=SETTINGS,
                          max_prompt_tokens=2048)
    batch = rl_collate_fn(datums)
    assert batch["task_name"] == ["negotiation", "negotiation"]
    assert [info["seed"] for info in batch["extra_env_info"]] == [0, 1]


def test_the_generated_yaml_is_a_valid_master_config(tmp_path: Path):
    base = Path(nemo_rl.__file__).resolve().parents[1] / "examples" / "configs" / "grpo_math_1B.yaml"
    if not base.is_file():
        pytest.skip("NeMo-RL is installed without its examples/ folder")
    study = load_study("paper")
    plan = plan_run(study, "e2b_shared_104")
    cfg = grpo_config(study, plan, settings=SETTINGS, paths=RunPaths.for_run(tmp_path, plan.run),
                      tracking_uri="sqlite:////x.db", parent_paths=RunPaths.for_run(tmp_path, plan.parent_run),
                      eos_token_id=1)
    cfg.pop("negotiation")
    master = _merged_config(json.loads(json.dumps(cfg)), [])
    assert master.grpo.max_rollout_turns == 13
    assert master.loss_fn["reference_policy_kl_type"] == "k3"
