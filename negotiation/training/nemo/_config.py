"""The NeMo-RL GRPO YAML of one training run, generated from the frozen protocol.

Every number comes from ``protocol/<study>/protocol.yaml`` (Appendix H recipe, Table 8 sizes);
this module only maps protocol keys to NeMo-RL keys (``docs/nemo-rl.md`` has the table). The
YAML overrides NeMo-RL's ``examples/configs/grpo_math_1B.yaml`` (named under ``defaults``), and
its ``negotiation`` section is ours: the launcher reads and removes it before NeMo-RL sees the
config.

Continuations start a fresh NeMo-RL run (own checkpoint folder, so nothing auto-resumes) from
the *base* model, and the launcher loads the parent's weights into the policy after setup. That
keeps the KL reference at the base weights (NeMo-RL copies the reference from the weights it
loads at setup, and a resume would make the parent the reference: issue #2955) and restarts
optimizer, warmup and cosine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from negotiation.env import prompt_hash
from negotiation.errors import ConfigError
from negotiation.protocol import Recipe
from negotiation.tracking import experiment_name
from negotiation.study import Study
from negotiation.training.nemo._dataset import validation_count
from negotiation.training.nemo._plan import RunPaths, RunPlan
from negotiation.training.nemo._state import ENV_NAME, NemoEnvSettings
from negotiation.lm import TurnTags, template_kwargs

__all__ = ["BASE_CONFIG", "DEFAULT_PROMPT_BUILDER", "grpo_config", "llm_size", "lr_schedule",
           "stop_token_ids", "write_train_config"]

BASE_CONFIG = "grpo_math_1B.yaml"
"""NeMo-RL example config (``examples/configs/``) whose sections the generated YAML overrides."""
DEFAULT_PROMPT_BUILDER = "negotiation.env:seller_training_messages"
"""``module:function`` building the seller's opening chat messages from its turn-1 view."""

_OPTIMIZERS = {
    "fused_adam": "transformer_engine.pytorch.optimizers.fused_adam.FusedAdam",
    # The protocol's weight decay is decoupled, so plain "adam" maps to AdamW as well.
    "adam": "torch.optim.AdamW",
    "adamw": "torch.optim.AdamW",
}


def stop_token_ids(tags: TurnTags, eos_token_id: int | None) -> list[int]:
    """End-of-turn id first, then EOS when it differs: a turn ends on either."""
    ids = [tags.end_of_turn_id]
    if eos_token_id is not None and int(eos_token_id) not in ids:
        ids.append(int(eos_token_id))
    return ids


def lr_schedule(warmup_steps: int, steps: int, floor: float) -> list[dict[str, Any]]:
    """NeMo-RL ``policy.scheduler`` giving the demo trainer's schedule (``negotiation.training.lr_at``).

    NeMo-RL steps the scheduler once per GRPO step and step ``k`` (0-based) trains at the rate
    after ``k`` scheduler steps. A LinearLR from ``1/W`` over ``W - 1`` iterations gives
    ``peak (k + 1) / W`` during warmup, reaching the peak on the last warmup step; the cosine
    then takes over with ``T_max = steps - W`` and reaches the floor on the run's last step.
    """
    if not 0 <= warmup_steps < steps:
        raise ConfigError(f"training.warmup_steps: {warmup_steps} must be below the run's {steps} steps")
    if warmup_steps <= 1:
        # One warmup step is the peak itself; with none the cosine starts at the peak (one step
        # earlier than lr_at, which has no schedule NeMo-RL's scheduler list can express).
        return [{"name": "torch.optim.lr_scheduler.CosineAnnealingLR",
                 "kwargs": {"T_max": steps - warmup_steps, "eta_min": floor}}]
    warmup = {"name": "torch.optim.lr_scheduler.LinearLR",
              "kwargs": {"start_factor": 1.0 / warmup_steps, "end_factor": 1.0, "total_iters": warmup_steps - 1}}
    cosine = {"name": "torch.optim.lr_scheduler.CosineAnnealingLR",
              "kwargs": {"T_max": steps - warmup_steps, "eta_min": floor}}
    return [warmup, cosine, {"milestones": [warmup_steps - 1]}]


def llm_size(study: Study, plan: RunPlan) -> Any:
    size = study.run_protocol(plan.run).sizes[plan.size]
    if size.kind != "llm":
        raise ConfigError(f"protocol/{study.name}/protocol.yaml:sizes.{plan.size}.kind: {size.kind!r}; "
                          "NeMo-RL trains language-model sellers (kind: llm), the demo trains its own policy")
    return size


def _recipe(study: Study, plan: RunPlan) -> tuple[Recipe, str]:
    """The recipe the plan's run trains with (``Study.run_protocol``: the size's section with the
    values of deviations covering the run) and its protocol key."""
    protocol = study.run_protocol(plan.run)
    return protocol.recipe_for(plan.size), protocol.recipe_key_for(plan.size)


def _grpo(study: Study, plan: RunPlan) -> dict[str, Any]:
    (recipe, _), n_val = _recipe(study, plan), validation_count(study.protocol)
    return {
        "num_prompts_per_step": recipe.scenarios_per_step,
        "num_generations_per_prompt": recipe.group_size,
        "max_num_steps": plan.steps,
        "max_num_epochs": 1,  # the dataset holds exactly steps x scenarios_per_step scenarios
        "max_rollout_turns": recipe.rollout_turns,
        "normalize_rewards": recipe.normalize_rewards,
        "use_leave_one_out_baseline": recipe.baseline == "leave_one_out",
        "val_period": recipe.validation_every,
        "val_at_start": recipe.validate_at_step_zero,
        "val_at_end": False,  # every run's last step is a multiple of the validation period
        "max_val_samples": n_val,
        "val_batch_size": n_val,
        "val_num_generations_per_prompt": 1,
        "overlong_filtering": False,
        "use_dynamic_sampling": False,
        "seed": plan.seed,
    }


def _loss(study: Study, plan: RunPlan) -> dict[str, Any]:
    recipe, _ = _recipe(study, plan)
    return {
        "reference_policy_kl_penalty": recipe.kl.coefficient,
        "reference_policy_kl_type": recipe.kl.estimator,
        "use_kl_in_reward": recipe.kl.applied_to == "reward",
        "use_on_policy_kl_approximation": False,
        "ratio_clip_min": recipe.clip.low,
        "ratio_clip_max": recipe.clip.high,
        "ratio_clip_c": None,
        "token_level_loss": recipe.loss_level == "token",
        "use_importance_sampling_correction": False,
        "disable_ppo_ratio": False,
        "force_on_policy_ratio": False,
    }


def _optimizer(study: Study, plan: RunPlan) -> dict[str, Any]:
    recipe, key = _recipe(study, plan)
    opt = recipe.optimizer
    kwargs: dict[str, Any] = {"lr": recipe.learning_rate * plan.lr_multiple,
                              "betas": list(opt.betas), "weight_decay": opt.weight_decay}
    if opt.precision == "bf16" and opt.name != "fused_adam":
        raise ConfigError(f"protocol/{study.name}/protocol.yaml:{key}.optimizer.precision: bf16 moments "
                          f"need fused_adam, not {opt.name!r}")
    if opt.precision == "bf16":
        kwargs.update(master_weights=True, store_param_remainders=True,
                      exp_avg_dtype="torch.bfloat16", exp_avg_sq_dtype="torch.bfloat16")
    return {"name": _OPTIMIZERS[opt.name], "kwargs": kwargs}


def _policy(study: Study, plan: RunPlan, stop_ids: list[int] | None) -> dict[str, Any]:
    protocol, size = study.run_protocol(plan.run), llm_size(study, plan)
    (recipe, key), sampling = _recipe(study, plan), protocol.sampling.self_served_seller
    seq = recipe.sequences
    if seq is None:
        raise ConfigError(f"protocol/{study.name}/protocol.yaml:{key}.sequences: null; a language-model "
                          "seller needs its token caps")
    return {
        "model_name": size.checkpoint,
        "tokenizer": {"name": size.checkpoint, "chat_template_kwargs": template_kwargs(sampling.thinking) or None},
        "train_global_batch_size": recipe.episodes_per_step,  # one optimizer step per GRPO step
        "train_micro_batch_size": size.train_micro_batch,
        "logprob_batch_size": size.train_micro_batch,
        "max_total_sequence_length": seq.context_tokens,
        "optimizer": _optimizer(study, plan),
        "scheduler": lr_schedule(recipe.warmup_steps, plan.steps, recipe.lr_floor * plan.lr_multiple),
        "dtensor_cfg": {"tensor_parallel_size": size.train_tensor_parallel,
                        # Gemma 4 checkpoints carry vision/audio towers the seller never uses.
                        "automodel_kwargs": {"freeze_config": {"freeze_vision_tower": True,
                                                               "freeze_audio_tower": True,
                                                               "freeze_language_model": False}}},
        "sequence_packing": {"enabled": False},
        "dynamic_batching": {"enabled": True},
        "make_sequence_length_divisible_by": 1,
        "generation": {
            "temperature": sampling.temperature, "top_p": sampling.top_p, "top_k": sampling.top_k,
            "max_new_tokens": seq.new_tokens_per_turn,
            "stop_token_ids": stop_ids,
            "stop_strings": None,
            "vllm_cfg": {"gpu_memory_utilization": size.generation_memory_fraction,
                         "tensor_parallel_size": size.train_tensor_parallel,
                         "max_model_len": seq.context_tokens,
                         "async_engine": False,  # the sync driver keeps episodes going after a cut turn
                         "skip_tokenizer_init": False},
        },
    }


def grpo_config(study: Study, plan: RunPlan, *, settings: NemoEnvSettings, paths: RunPaths, tracking_uri: str,
                parent_paths: RunPaths | None = None, eos_token_id: int | None = None,
                prompt_builder: str = DEFAULT_PROMPT_BUILDER, protocol_hash: str | None = None,
                gpus_per_node: int | None = None, num_nodes: int = 1) -> dict[str, Any]:
    """The GRPO YAML of ``plan`` as a dict (``negotiation`` section included)."""
    tags = settings.turn_tags
    stop_ids = stop_token_ids(tags, eos_token_id) if tags is not None else None
    size = llm_size(study, plan)
    parent_weights = None
    if plan.parent_run is not None:
        if parent_paths is None:
            raise ValueError(f"run {plan.run!r} continues {plan.parent_run!r}: parent_paths is required")
        parent_weights = str(parent_paths.step_dir(plan.parent_step) / "policy" / "weights")
    recipe, _ = _recipe(study, plan)
    return {
        "defaults": BASE_CONFIG,
        "grpo": _grpo(study, plan),
        "loss_fn": _loss(study, plan),
        "policy": _policy(study, plan, stop_ids),
        "data": {"max_input_seq_length": recipe.sequences.prompt_tokens, "shuffle": False},
        # the default reward kind stays unwritten: the study's configs keep their bytes
        "env": {ENV_NAME: settings.model_dump(mode="json", exclude={"reward"} if settings.reward == "eq1" else None)},
        "checkpointing": {
            "enabled": True, "checkpoint_dir": str(paths.checkpoints),
            "save_period": recipe.checkpoint_every, "keep_top_k": None,  # read points need every save
            "metric_name": "val:accuracy", "higher_is_better": True, "save_optimizer": True,
            "model_save_format": "torch_save", "save_consolidated": False,  # DCP: the HF converter reads it
        },
        "logger": {
            "log_dir": str(paths.logs), "mlflow_enabled": True, "wandb_enabled": False,
            "tensorboard_enabled": False, "swanlab_enabled": False,
            "mlflow": {"experiment_name": experiment_name(study.name), "run_name": plan.run, "tracking_uri": tracking_uri},
        },
        "cluster": {"gpus_per_node": gpus_per_node or size.train_tensor_parallel, "num_nodes": num_nodes},
        "negotiation": {
            "plan": plan.model_dump(mode="json"),
            "parent_weights": parent_weights,
            "prompt_builder": prompt_builder,
            "prompt_hash": prompt_hash(settings.prompt_template),
            "protocol_hash": protocol_hash,
            "train_scenarios": {"offset": plan.step_offset * recipe.scenarios_per_step,
                                "count": plan.steps * recipe.scenarios_per_step},
            "eos_token_id": eos_token_id,
        },
    }


def write_train_config(config: dict[str, Any], path: Path) -> Path:
    """Write ``config`` as YAML (parents created); return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = ("# NeMo-RL GRPO config generated by `nego train-config` from the frozen protocol; "
              "do not edit, regenerate.\n")
    path.write_text(header + yaml.safe_dump(config, sort_keys=False, width=100), encoding="utf-8")
    return path
