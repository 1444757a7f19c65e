"""Run one NeMo-RL GRPO training run from a YAML that ``nego train-config`` wrote.

The train stage calls ``launch_training``. Before anything heavy starts it checks that NeMo-RL,
Ray, the GPUs, the model checkpoint and (for a continuation) the parent's weights are all there,
and raises one ``BackendUnavailableError`` naming every missing piece. Then, in the sliding-puzzle
style of NeMo-RL's examples: merge the YAML onto NeMo-RL's base config, derive the turn tags from
the arm's tokenizer and check them on a real prompt, build the scenario datasets, start the
environment actor, open the MLflow run with our tags, set up, load a continuation's parent
weights into the policy (never into the KL reference), and train.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import yaml

from negotiation.env import prompt_hash
from negotiation.errors import ConfigError
from negotiation.study import Study, load_study
from negotiation.tracking import git_commit
from negotiation.training.nemo._backend import import_backend, require_backend
from negotiation.training.nemo._config import BASE_CONFIG, stop_token_ids
from negotiation.training.nemo._dataset import (
    build_datums, load_prompt_builder, training_scenarios, validation_scenarios,
)
from negotiation.training.nemo._plan import RunPlan
from negotiation.training.nemo._state import ENV_NAME, TASK_NAME, NemoEnvSettings, replay
from negotiation.lm import DEFAULT_HISTORY, check_round_trip, derive_turn_tags

__all__ = ["RUN_RECORD", "launch_training", "read_train_config"]

RUN_RECORD = "run.json"
"""Written into the run folder: plan, hashes, MLflow run id; maps local to combined steps."""


def read_train_config(path: Path) -> tuple[dict[str, Any], dict[str, Any], RunPlan]:
    """(NeMo-RL part, ``negotiation`` part, plan) of a generated YAML."""
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}:<file>: cannot read ({exc})") from exc
    if not isinstance(raw, dict) or "negotiation" not in raw:
        raise ConfigError(f"{path}:negotiation: missing; regenerate the file with `nego train-config`")
    ours = raw.pop("negotiation")
    return raw, ours, RunPlan.model_validate(ours["plan"])


def _check_inputs(nemo: dict[str, Any], ours: dict[str, Any]) -> None:
    cluster = nemo.get("cluster", {})
    extra = {"parent checkpoint weights (negotiation.parent_weights)": Path(ours["parent_weights"])} \
        if ours.get("parent_weights") else {}
    require_backend(model=str(nemo["policy"]["model_name"]),
                    gpus_needed=int(cluster.get("gpus_per_node", 1)) * int(cluster.get("num_nodes", 1)),
                    extra_paths=extra)


def _merged_config(nemo: dict[str, Any], overrides: Sequence[str]) -> Any:
    omegaconf = import_backend("omegaconf")
    config_utils = import_backend("nemo_rl.utils.config")
    base_name = nemo.pop("defaults", BASE_CONFIG)
    base_path = Path(import_backend("nemo_rl").__file__).resolve().parents[1] / "examples" / "configs" / base_name
    if not base_path.is_file():
        raise ConfigError(f"defaults: {base_name!r} not found at {base_path}; use a full NeMo-RL checkout")
    config_utils.register_omegaconf_resolvers()
    merged = omegaconf.OmegaConf.merge(config_utils.load_config(str(base_path)), omegaconf.OmegaConf.create(nemo))
    if overrides:
        merged = config_utils.parse_hydra_overrides(merged, list(overrides))
    grpo = import_backend("nemo_rl.algorithms.grpo")
    return grpo.MasterConfig(**omegaconf.OmegaConf.to_container(merged, resolve=True))


def _turn_tags(tokenizer: Any, config: Any, settings: NemoEnvSettings, first_prompt: list[dict[str, str]],
               path: Path):
    kwargs = dict(config.policy["tokenizer"].get("chat_template_kwargs") or {})
    tags = derive_turn_tags(tokenizer, kwargs)
    if settings.turn_tags is not None and settings.turn_tags != tags:
        raise ConfigError(f"{path}:env.{ENV_NAME}.turn_tags: written for another tokenizer ({settings.turn_tags}) "
                          f"than {tags}; regenerate the config")
    # The round trip again, on the real opening prompt of the run's first scenario.
    check_round_trip(tokenizer, tags, first_prompt + list(DEFAULT_HISTORY[1:]))
    return tags


def _parent_mlflow_run(config: Any, plan: RunPlan) -> str:
    """MLflow run id of the parent run, from its run record (empty for an initial run)."""
    if plan.parent_run is None:
        return ""
    record = Path(config.checkpointing["checkpoint_dir"]).parent.parent / plan.parent_run / RUN_RECORD
    try:
        return json.loads(record.read_text(encoding="utf-8")).get("mlflow_run_id", "")
    except (OSError, json.JSONDecodeError):
        return ""  # a parent trained elsewhere: the parent_arm tag still names it


def _open_mlflow_run(config: Any, plan: RunPlan, ours: dict[str, Any], root: Path) -> str:
    """Create the MLflow run with our tags; NeMo-RL's logger then logs into it by id."""
    from mlflow.tracking import MlflowClient

    cfg = config.logger["mlflow"]
    client = MlflowClient(tracking_uri=cfg["tracking_uri"])  # no process-wide URI: NeMo-RL's logger sets it
    experiment = client.get_experiment_by_name(cfg["experiment_name"])
    experiment_id = experiment.experiment_id if experiment else client.create_experiment(cfg["experiment_name"])
    # The demo trainer's tag keys ("arm" is the training run), plus what only this backend has.
    tags = {"study": plan.study, "arm": plan.run, "size": plan.size, "lr_multiple": str(plan.lr_multiple),
            "parent_run": _parent_mlflow_run(config, plan), "parent_arm": plan.parent_run or "",
            "protocol_hash": ours.get("protocol_hash") or "", "git_commit": git_commit(root), "phase": "training",
            "prompt_hash": ours.get("prompt_hash") or "", "backend": "nemo-rl",
            "step_offset": str(plan.step_offset), "requested_arm": plan.arm or ""}
    run = client.create_run(experiment_id, run_name=plan.run, tags=tags)
    cfg["run_id"] = run.info.run_id
    return run.info.run_id


def _reopen_mlflow_run(config: Any, run_dir: Path) -> str:
    """A resumed run logs into the MLflow run its first launch opened."""
    try:
        run_id = json.loads((run_dir / RUN_RECORD).read_text(encoding="utf-8"))["mlflow_run_id"]
    except (OSError, json.JSONDecodeError, KeyError) as exc:
        raise ConfigError(f"{run_dir / RUN_RECORD}:mlflow_run_id: cannot read it to resume ({exc})") from exc
    config.logger["mlflow"]["run_id"] = run_id
    return run_id


def _offset_steps(logger: Any, offset: int) -> None:
    """Log a continuation's metrics at combined steps (NeMo-RL counts from its own step 0)."""
    if offset:
        log_metrics = logger.log_metrics
        logger.log_metrics = lambda metrics, step, *a, **k: log_metrics(metrics, step + offset, *a, **k)


def _load_parent_weights(policy: Any, generation: Any, weights: str) -> None:
    # Weights only (no optimizer, no scheduler): the continuation restarts its schedule, and the
    # KL reference copied at setup stays the base model.
    policy.run_all_workers_single_data("load_checkpoint", weights_path=weights, optimizer_path=None)
    synchronizer = getattr(generation, "weight_synchronizer", None)
    if synchronizer is not None:
        synchronizer.sync_weights()  # a fresh run would otherwise skip its first refit


def _resuming(config_path: Path, nemo: dict[str, Any], resume: bool) -> bool:
    """Whether NeMo-RL will resume from checkpoints already in the run's folder.

    NeMo-RL resumes from the highest ``step_N`` there and then copies its KL reference from the
    resumed weights instead of the base model (NVIDIA-NeMo/RL #2955, fixed after the release we
    read), so resuming is refused unless the caller accepts it.
    """
    folder = Path(nemo["checkpointing"]["checkpoint_dir"])
    found = sorted(p.name for p in folder.glob("step_*")) if folder.is_dir() else []
    if found and not resume:
        raise ConfigError(f"{config_path}:checkpointing.checkpoint_dir: {folder} holds {found}; NeMo-RL would "
                          "resume and take its KL reference from the resumed weights, not the base model "
                          "(NVIDIA-NeMo/RL #2955). Use a fresh folder, or resume=True with a NeMo-RL that has "
                          "the fix (#3722)")
    return bool(found)


def _checked(config_path: Path, root: Path | None, resume: bool,
             loaded: Study | None) -> tuple[dict, dict, RunPlan, Any, Any, bool]:
    """Read the YAML and check, before any GPU work, that it still matches the protocol, the
    prompt and this machine (the train stage's ``Study`` when given, else loaded here)."""
    nemo, ours, plan = read_train_config(config_path)
    study = loaded if loaded is not None and loaded.name == plan.study else load_study(plan.study, root)
    if ours.get("protocol_hash") and ours["protocol_hash"] != study.lock_hash:
        raise ConfigError(f"{config_path}:negotiation.protocol_hash: the protocol changed since this config "
                          "was written; regenerate it")
    if ours.get("prompt_hash") != prompt_hash(nemo["env"][ENV_NAME].get("prompt_template", "training")):
        raise ConfigError(f"{config_path}:negotiation.prompt_hash: the training prompt changed since this config "
                          "was written; regenerate it")
    builder = load_prompt_builder(ours["prompt_builder"])
    resuming = _resuming(config_path, nemo, resume)
    _check_inputs(nemo, ours)
    return nemo, ours, plan, study, builder, resuming


def launch_training(config_path: Path, *, overrides: Sequence[str] = (), root: Path | None = None,
                    resume: bool = False, study: Study | None = None) -> Path:
    """Train the run ``config_path`` describes; return its run folder.

    ``resume`` accepts continuing from checkpoints already in the run's folder (see ``_resuming``);
    a resumed continuation keeps its own weights instead of reloading the parent's. ``study``: the
    caller's loaded study (the train stage's), read instead of loading the config's study again.
    """
    nemo, ours, plan, study, builder, resuming = _checked(config_path, root, resume, study)
    config = _merged_config(nemo, overrides)
    algo_utils, grpo = import_backend("nemo_rl.algorithms.utils"), import_backend("nemo_rl.algorithms.grpo")
    import_backend("nemo_rl.distributed.virtual_cluster").init_ray()
    algo_utils.set_seed(plan.seed)
    tokenizer = algo_utils.get_tokenizer(config.policy["tokenizer"])
    settings = NemoEnvSettings.model_validate(config.env[ENV_NAME])
    states = training_scenarios(study.protocol, seed=plan.seed, **ours["train_scenarios"])
    opening = [dict(m) for m in builder(replay(states[0], settings).view())]
    settings = settings.model_copy(update={"turn_tags": _turn_tags(tokenizer, config, settings, opening, config_path)})
    tags, generation = settings.turn_tags, config.policy["generation"]
    generation["stop_token_ids"] = generation.get("stop_token_ids") or stop_token_ids(tags, tokenizer.eos_token_id)
    config.policy["generation"] = import_backend("nemo_rl.models.generation").configure_generation_config(
        generation, tokenizer)
    cap = config.data["max_input_seq_length"]
    train = build_datums(states, tokenizer=tokenizer, prompt_builder=builder, settings=settings, max_prompt_tokens=cap)
    val = build_datums(validation_scenarios(study.protocol), tokenizer=tokenizer,
                       prompt_builder=builder, settings=settings, max_prompt_tokens=cap)
    from negotiation.training.nemo._actor import environment_actor_class

    env = environment_actor_class().options(num_gpus=0).remote(settings.model_dump(mode="json"))
    run_dir = Path(config.checkpointing["checkpoint_dir"]).parent
    run_dir.mkdir(parents=True, exist_ok=True)
    run_id = _reopen_mlflow_run(config, run_dir) if resuming else _open_mlflow_run(config, plan, ours, study.root)
    record = {"plan": plan.model_dump(mode="json"), "mlflow_run_id": run_id, "turn_tags": tags.model_dump(),
              "protocol_hash": ours.get("protocol_hash"), "prompt_hash": ours.get("prompt_hash"),
              "parent_weights": ours.get("parent_weights")}
    (run_dir / RUN_RECORD).write_text(json.dumps(record, indent=2), encoding="utf-8")
    (policy, policy_generation, _gym, _cluster, dataloader, val_dataloader, loss_fn, logger, checkpointer,
     grpo_state, master_config, *_rest) = grpo.setup(config, tokenizer, train, val)
    if ours.get("parent_weights") and not resuming:
        _load_parent_weights(policy, policy_generation, ours["parent_weights"])
    _offset_steps(logger, plan.step_offset)
    grpo.grpo_train(policy, policy_generation, dataloader, val_dataloader, tokenizer, loss_fn,
                    {TASK_NAME: env}, {TASK_NAME: env}, logger, checkpointer, grpo_state, master_config)
    return run_dir
