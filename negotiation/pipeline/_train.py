"""Stage functions before evaluation: ``init@size``, ``train@run`` and ``select@arm``.

Policy sizes (the demo) train here on the CPU. Language-model sizes train with the token-level
trainer (``negotiation.training.lm``): the ``lm`` ladder always, the paper's LLM sizes when
``params.yaml: training.backend`` is ``token``; otherwise (``nemo``, the default) they go through
the NeMo-RL backend, which stops with a message naming what is missing when it cannot run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from negotiation.errors import ConfigError, NegotiationError
from negotiation.evaluation import folder_sha256
from negotiation.pipeline._progress import StageProgress
from negotiation.pipeline._plan import profile_plan
from negotiation.pipeline._stage import PARAMS_FILE, runtime_count, runtime_switch
from negotiation.protocol import fill_seller
from negotiation.study import ResultsLayout, Study, as_study, write_record
from negotiation.registry import select_checkpoint

MODELS_ENV = "NEGO_MODELS_DIR"
BACKENDS = ("nemo", "token")
"""``params.yaml: training.backend`` values for the paper's LLM sizes."""


class MissingBackendError(NegotiationError):
    """A stage needs something this machine lacks (GPUs, NeMo-RL, weights, API keys)."""


def _write_json(path: Path, payload: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def run_tokenizer(study: Study | str, out_dir: Path) -> dict[str, Any]:
    """Train and check the ladder's tokenizer (``lm`` studies only)."""
    from negotiation.ladder import write_tokenizer

    study = as_study(study)
    if study.protocol.tokenizer is None:
        raise ConfigError(f"protocol/{study.name}/protocol.yaml:tokenizer: the study has no language-model ladder")
    return write_tokenizer(study.protocol, Path(out_dir))


def run_init(study: Study | str, size: str, out_dir: Path) -> Path:
    """Write a size's untrained weights (policy), its warm-started base (the ``lm`` ladder) or
    point at its local base checkpoint (LLM)."""
    study = as_study(study)
    spec = study.protocol.sizes[size]
    out_dir = Path(out_dir)
    if spec.kind == "policy":
        from negotiation.training import write_initial_policy

        return write_initial_policy(study, size, out_dir)
    if spec.kind == "lm":
        from negotiation.ladder import write_base

        _refuse_finished(out_dir / "warm_start.json", out_dir)  # one cut short resumes (write_base)
        tokenizer = _layout(study, size=size).tokenizer  # the size's profile's tokenizer stage
        write_base(study.protocol, size, tokenizer, out_dir, device=_stage_device())
        return out_dir
    models = os.environ.get(MODELS_ENV)
    local = Path(models) / spec.checkpoint if models else None
    if local is None or not local.is_dir():
        raise MissingBackendError(
            f"init@{size}: the base checkpoint {spec.checkpoint!r} is not on this machine; download it and "
            f"set {MODELS_ENV} to the folder holding it (looked at {local or f'${MODELS_ENV} (unset)'})")
    return _write_json(out_dir / "source.json", {"size": size, "checkpoint": str(local.resolve())})


def _stage_device() -> str:
    """Where a training stage (``init@``, ``train@``) runs: CUDA when the machine has it (the GPU
    profile's machine), else the CPU."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _layout(study: Study, **which: str) -> ResultsLayout:
    """The results layout of the profile that builds the given arm, run or size (``profile_plan``)."""
    return ResultsLayout(study.root / profile_plan(study, **which)["out"])


def _refuse_finished(marker: Path, folder: Path) -> None:
    """A finished init or run is never overwritten: a GPU profile's outputs persist (DVC keeps them
    when it reruns the stage), and they cost GPU hours; the user deletes the folder to rebuild it."""
    if marker.is_file():
        raise ConfigError(f"{folder}: holds a finished result ({marker.name}), which a rerun never overwrites; "
                          "delete the folder to build it again")


def training_backend(params_file: Path = PARAMS_FILE) -> str:
    """``training.backend`` of ``params.yaml`` (``nemo`` when unset); a stage param, since the
    backend decides what a training stage produces."""
    raw = yaml.safe_load(params_file.read_text(encoding="utf-8")) if params_file.exists() else None
    value = ((raw or {}).get("training") or {}).get("backend", "nemo")
    if value not in BACKENDS:
        raise ConfigError(f"{params_file}:training.backend: expected one of {list(BACKENDS)}, got {value!r}")
    return value


def run_train(study: Study | str, run: str, out_dir: Path, *, track: bool = True) -> dict[str, Any]:
    """Train one run: the demo trainer for policy sizes, the token trainer for the ``lm`` ladder
    and (``training.backend: token``) the paper's sizes, else NeMo-RL."""
    study = as_study(study)
    plan = profile_plan(study, run=run)
    info = plan["runs"][run]
    kind = study.protocol.sizes[info["size"]].kind
    branch = info["branch_step"] if info["parent"] else None  # registry continuations, else the rule
    if kind == "lm" or (kind == "llm" and training_backend() == "token"):
        return _train_tokens(study, run, info, Path(out_dir), track)
    if kind != "policy":
        return _train_with_nemo(study, run, branch)
    from negotiation.training import branch_checkpoint, train_arm, train_config_for, training_env

    parent = branch_checkpoint(study.root / info["start"], branch) if info["parent"] else None
    base = None if info["parent"] else study.root / info["start"]  # the size's base: init@'s output
    cfg = train_config_for(study, run, parent=parent, steps=info["steps"], protocol_hash=study.lock_hash, base=base)
    with StageProgress(f"train@{run}", unit="steps") as progress:
        def on_step(step: int, total: int, metrics: dict[str, float]) -> None:
            progress.update(step, total, f"reward {metrics['train/reward']:.3f}, "
                                         f"KL {metrics['train/kl_penalty']:.4f}")

        # The MLflow run is recorded beside the checkpoints; the track stage logs it (importing
        # MLflow and opening the store here would cost each of the demo's runs about 4 s).
        summary = train_arm(cfg, training_env(study.protocol), out_dir, track=track, record=True,
                            processes=rollout_processes(), on_step=on_step)
    return summary.model_dump(mode="json") if hasattr(summary, "model_dump") else dict(vars(summary))


AUTO_ROLLOUT_PROCESSES = 4
"""``training.rollout_processes: auto``: one per usable CPU, at most this many (shards of 16 or
more of a step's 64 episodes; measured on 2 CPUs only, docs/training.md)."""


def rollout_processes() -> int:
    """Processes of the demo trainer's rollouts: run-time knob ``training.rollout_processes``
    (``auto`` or a positive integer). Never a stage param: the run's bytes are the same with any."""
    count = runtime_count("training.rollout_processes")
    return count if count is not None else max(1, min(len(os.sched_getaffinity(0)), AUTO_ROLLOUT_PROCESSES))


AUTO_MICRO_BATCH_TOKENS = {"cpu": 16384, "cuda": 131072}
"""``training.micro_batch_tokens: auto`` per device: on CUDA a GRPO step's ~200k sequence tokens in
two micro-batches, as the GPU figures were measured (lm_m and lm_l peaked at 26 and 59 GB on an
H100 without checkpointing, docs/results/lm-gpu-*); on the CPU what fits a few GB of host memory."""


def micro_batch_tokens(device: str) -> int:
    """Padded tokens per micro-batch of the token trainer: run-time knob ``training.micro_batch_tokens``
    (``auto``: ``AUTO_MICRO_BATCH_TOKENS`` of the device, or a positive integer)."""
    count = runtime_count("training.micro_batch_tokens")
    return count if count is not None else AUTO_MICRO_BATCH_TOKENS[device]


def _base_folder(study: Study, size: str) -> Path:
    """The Hugging Face folder of a size's base: the ladder's init folder itself (of the size's
    profile), or the local checkpoint a paper size's ``init@`` recorded in ``source.json``."""
    folder = _layout(study, size=size).init(size)
    source = folder / "source.json"
    if source.is_file():
        return Path(json.loads(source.read_text(encoding="utf-8"))["checkpoint"])
    return folder


def _train_tokens(study: Study, run: str, info: dict[str, Any], out_dir: Path, track: bool) -> dict[str, Any]:
    """One run with the token-level trainer: on CUDA when present (bf16 per the protocol's
    optimizer precision, the compiled rollout engine, gradient checkpointing where one micro-batch
    does not fit: ``training.gradient_checkpointing``), else on the CPU."""
    import torch

    from negotiation.training import branch_checkpoint
    from negotiation.training.lm import RESUME_FILE, TIMING_FILE, LmRuntime, lm_train_config_for, train_lm_arm

    owner = study.arms[info["params_key"].split(".", 1)[1]]
    parent = branch_checkpoint(study.root / info["start"], info["branch_step"]) if info["parent"] else None
    cuda = _stage_device() == "cuda"
    precision = study.run_protocol(run).recipe_for(info["size"]).optimizer.precision
    runtime = LmRuntime(device="cuda" if cuda else "cpu", dtype="bfloat16" if precision == "bf16" else "float32",
                        gradient_checkpointing=runtime_switch("training.gradient_checkpointing") if cuda else False,
                        micro_batch_tokens=micro_batch_tokens("cuda" if cuda else "cpu"), compile_rollout=cuda,
                        threads=torch.get_num_threads())
    cfg = lm_train_config_for(study, run, owner, base=_base_folder(study, info["size"]), parent=parent,
                              steps=info["steps"], runtime=runtime, protocol_hash=study.lock_hash)
    # A partial run (resume.pt: a device call ran out of time) resumes; a finished one is kept. The
    # MLflow run is recorded beside the checkpoints for the track stage (no MLflow where this runs).
    partial = (out_dir / RESUME_FILE).is_file()
    if not partial:
        _refuse_finished(out_dir / TIMING_FILE, out_dir)
    summary = train_lm_arm(cfg, out_dir, track=track, record=True, resume=partial)
    return {"run": run, "backend": "token", "checkpoints": summary.checkpoints, "val_scores": summary.val_scores,
            "seconds": summary.seconds, "mlflow_run_id": summary.mlflow_run_id}


def _train_with_nemo(study: Study, run: str, branch_step: int | None) -> dict[str, Any]:
    """Write the run's NeMo-RL config (a continuation from the plan's ``branch_step``) and launch
    it; stops first naming what is missing."""
    from negotiation.training.nemo import launch_training, require_backend, write_run_config

    require_backend()  # raises BackendUnavailableError listing nemo_rl, ray, GPUs, ...
    config, _ = write_run_config(study, run, use_tokenizer=False, parent_step=branch_step)
    launch_training(config, study=study)
    return {"run": run, "config": str(config)}


def _seller_spec(study: Study, arm_name: str, checkpoint: str | None, plan: dict[str, Any]) -> str:
    arm = study.arms[arm_name]
    if arm.kind == "base":
        return fill_seller(arm.seller, base=str(Path(plan["arms"][arm_name]["source"])))
    if arm.kind == "trained":
        return fill_seller(arm.seller, checkpoint=str(checkpoint))
    return arm.seller


def served_checkpoint(root: Path, checkpoint: str, select_dir: Path) -> str:
    """The folder a trained arm's seller is served from, relative to ``root``.

    A NeMo-RL ``step_N/`` (``policy/weights``: DCP or consolidated) is not a folder vLLM can load,
    so it is exported to Hugging Face format under ``select/<arm>/hf/`` and the seller points
    there; any other checkpoint (the demo's policies, the token trainer's HF ``step_N``) is served
    as it is."""
    step_dir = Path(root) / checkpoint
    if not (step_dir / "policy" / "weights").is_dir():
        return checkpoint
    from negotiation.training.nemo import export_hf

    target = Path(select_dir) / "hf"
    export_hf(step_dir, target, overwrite=True)
    return str(target.resolve().relative_to(Path(root).resolve()))


def run_select(study: Study | str, arm_name: str, results_dir: Path) -> dict[str, Any]:
    """Apply the read-point rule (trained arms) and write the seller every arm is evaluated with."""
    study = as_study(study)
    plan = profile_plan(study, arm=arm_name)
    arm = study.arms[arm_name]
    layout = ResultsLayout(Path(results_dir))
    checkpoint = None
    if arm.kind == "trained":
        run_dir = _layout(study, arm=arm_name).train(arm.run)
        # The branch is data (registry continuations, else the rule): the plan states it.
        branch = plan["arms"][arm_name]["branch_step"] if arm.parent_run else None
        record = select_checkpoint(study, arm_name, run_dir, arm=arm, parent_step=branch)
        # Paths relative to the repository root, so records and specs are the same on every machine.
        relative = Path(record.checkpoint).resolve().relative_to(study.root.resolve())
        record = record.model_copy(update={"checkpoint": str(relative)})
        write_record(record, layout.selection(arm_name))
        checkpoint = served_checkpoint(study.root, record.checkpoint, layout.select(arm_name))
    seller = _seller_spec(study, arm_name, checkpoint, plan)
    # pilot@ and evaluate@ depend on this file alone: the spec names the checkpoint's path, and
    # the weights' hash makes a retrained checkpoint at the same path rerun them. No protocol
    # hash (selection.json carries it for the audit), so unrelated protocol edits rerun nothing.
    weights = study.root / checkpoint if checkpoint else (study.root / plan["arms"][arm_name]["source"]
                                                          if arm.kind == "base" else None)
    payload = {"version": 1, "study": study.name, "arm": arm_name, "kind": arm.kind, "seller": seller,
               "weights_sha256": folder_sha256(Path(weights)) if weights else None}
    _write_json(layout.seller(arm_name), payload)
    return payload
