"""The NeMo-RL GRPO YAML of an arm's training run, written from the frozen protocol.

``nego train-config`` is a thin command over ``write_run_config``; the DVC train stage calls it
directly. Turn tags and stop token ids are derived from the size's tokenizer when transformers
can load it; with ``use_tokenizer=False`` they are left empty and the launcher derives them
before training.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from negotiation.errors import ConfigError
from negotiation.lm import derive_turn_tags, template_kwargs
from negotiation.study import ResultsLayout, Study, as_study, results_dir
from negotiation.training.nemo._backend import import_backend
from negotiation.training.nemo._config import DEFAULT_PROMPT_BUILDER, grpo_config, llm_size, write_train_config
from negotiation.training.nemo._plan import RunPaths, RunPlan, plan_run, resolve_tracking_uri
from negotiation.training.nemo._state import protocol_env_settings

__all__ = ["default_runs_dir", "load_hf_tokenizer", "write_run_config"]


def default_runs_dir(study: str, root: Path | None = None) -> Path:
    """``<root>/outputs/<study>/train``: one folder per training run."""
    return ResultsLayout(results_dir(study, root)).train_root


def load_hf_tokenizer(name: str) -> Any:
    """The Hugging Face tokenizer of a checkpoint (hub id or folder)."""
    transformers = import_backend("transformers")
    try:
        return transformers.AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--tokenizer: cannot load {name!r} ({exc}); "
                          "pass --tokenizer DIR or --no-tokenizer") from exc


def write_run_config(
    study: Study | str,
    arm: str,
    *,
    out: Path | None = None,
    runs_dir: Path | None = None,
    tokenizer: str | None = None,
    use_tokenizer: bool = True,
    parent_step: int | None = None,
    seed: int = 0,
    gpus_per_node: int | None = None,
    num_nodes: int = 1,
    prompt_builder: str = DEFAULT_PROMPT_BUILDER,
    root: Path | None = None,
) -> tuple[Path, RunPlan]:
    """Write the NeMo-RL GRPO config of ``arm``'s training run (or of the run named ``arm``).

    Args:
        out: YAML path; default ``<runs_dir>/<run>/grpo.yaml``.
        runs_dir: training root; default ``outputs/<study>/train``.
        tokenizer: tokenizer for the turn tags; default the size's checkpoint.
        use_tokenizer: False leaves turn tags and stop ids to the launcher.
        parent_step: branch a continuation here; default the registry's ``continuations.yaml``,
            else the parent's ``initial_steps``.
        seed: training seed (``grpo.seed`` and the dataset order).
        gpus_per_node: default the size's train tensor-parallel degree.
        prompt_builder: ``module:function`` of the seller's opening prompt.

    Returns:
        The written path and the run's plan.
    """
    from negotiation.study import continuation_branches

    loaded = as_study(study, root)
    arms = loaded.arms  # frozen and registry-added (the paper's 3x and 10x runs) train alike
    if parent_step is None:  # the branch is data: the registry's entry, else the rule
        branch = continuation_branches(loaded, arms, loaded.continuations).get(arms[arm].run if arm in arms else arm)
        parent_step = branch.branch_step if branch else None
    plan = plan_run(loaded, arm, seed=seed, parent_step=parent_step, arms=arms)
    base = Path(runs_dir) if runs_dir else default_runs_dir(loaded.name, loaded.root)
    paths = RunPaths.for_run(base, plan.run)
    parent = RunPaths.for_run(base, plan.parent_run) if plan.parent_run else None
    size = llm_size(loaded, plan)
    tags = eos = None
    if use_tokenizer:
        chat = load_hf_tokenizer(tokenizer or size.checkpoint)
        thinking = loaded.protocol.sampling.self_served_seller.thinking
        tags, eos = derive_turn_tags(chat, template_kwargs(thinking)), getattr(chat, "eos_token_id", None)
    config = grpo_config(loaded, plan, settings=protocol_env_settings(loaded.protocol, tags), paths=paths,
                         tracking_uri=resolve_tracking_uri(), parent_paths=parent, eos_token_id=eos,
                         prompt_builder=prompt_builder, protocol_hash=loaded.lock_hash,
                         gpus_per_node=gpus_per_node, num_nodes=num_nodes)
    return write_train_config(config, out or paths.config), plan
