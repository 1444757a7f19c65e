"""``nego train-config STUDY ARM``: write the NeMo-RL GRPO YAML of an arm's training run.

The command function is mounted by the CLI package (``app.command("train-config")(train_config)``).
Turn tags and stop token ids are derived from the size's tokenizer when transformers can load it;
with ``--no-tokenizer`` they are left empty and the launcher derives them before training.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from negotiation.study import default_root, load_study, protocol_hash
from negotiation.training.nemo._backend import import_backend
from negotiation.errors import ConfigError
from negotiation.training.nemo._config import (
    DEFAULT_PROMPT_BUILDER, grpo_config, llm_size, write_train_config,
)
from negotiation.training.nemo._plan import RunPaths, plan_run, resolve_tracking_uri
from negotiation.training.nemo._state import env_settings
from negotiation.lm import derive_turn_tags, template_kwargs

__all__ = ["default_runs_dir", "load_hf_tokenizer", "train_config"]


def default_runs_dir(study: str, root: Path | None = None) -> Path:
    """``<root>/outputs/<study>/train``: one folder per training run."""
    return Path(root or default_root()) / "outputs" / study / "train"


def load_hf_tokenizer(name: str) -> Any:
    """The Hugging Face tokenizer of a checkpoint (hub id or folder)."""
    transformers = import_backend("transformers")
    try:
        return transformers.AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--tokenizer: cannot load {name!r} ({exc}); "
                          "pass --tokenizer DIR or --no-tokenizer") from exc


def train_config(
    study: str = typer.Argument(..., help="Study under protocol/, e.g. paper."),
    arm: str = typer.Argument(..., help="Trained arm (its run is configured) or a run name."),
    out: Optional[Path] = typer.Option(None, "--out", help="YAML path; default <runs-dir>/<run>/grpo.yaml."),
    runs_dir: Optional[Path] = typer.Option(None, "--runs-dir",
                                            help="Training root; default outputs/<study>/train."),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer",
                                            help="Tokenizer for turn tags; default the size's checkpoint."),
    no_tokenizer: bool = typer.Option(False, "--no-tokenizer",
                                      help="Leave turn tags and stop ids to the launcher."),
    parent_step: Optional[int] = typer.Option(None, "--parent-step",
                                              help="Branch a continuation here; default registry "
                                                   "continuations.yaml, else the parent's step initial_steps."),
    seed: int = typer.Option(0, "--seed", help="Training seed (grpo.seed and the dataset order)."),
    gpus_per_node: Optional[int] = typer.Option(None, "--gpus-per-node",
                                                help="Default: the size's train tensor-parallel degree."),
    num_nodes: int = typer.Option(1, "--num-nodes", help="Nodes of the Ray cluster."),
    prompt_builder: str = typer.Option(DEFAULT_PROMPT_BUILDER, "--prompt-builder",
                                       help="module:function of the seller's opening prompt."),
    root: Optional[Path] = typer.Option(None, "--root", help="Repository root holding protocol/."),
) -> Path:
    """Write the NeMo-RL GRPO config of ARM's training run from the frozen protocol."""
    from negotiation.registry import load_registry
    from negotiation.study import continuation_branches

    loaded = load_study(study, root)
    registry = load_registry(study, loaded.root)
    arms = {**loaded.arms, **registry.added}  # added arms (the paper's 3x and 10x runs) train too
    if parent_step is None:  # the branch is data: the registry's entry, else the rule
        branch = continuation_branches(loaded, arms, registry.continuations).get(arms[arm].run if arm in arms else arm)
        parent_step = branch.branch_step if branch else None
    plan = plan_run(loaded, arm, seed=seed, parent_step=parent_step, arms=arms)
    base = Path(runs_dir) if runs_dir else default_runs_dir(study, loaded.root)
    paths = RunPaths.for_run(base, plan.run)
    parent = RunPaths.for_run(base, plan.parent_run) if plan.parent_run else None
    size = llm_size(loaded, plan)
    tags = eos = None
    if not no_tokenizer:
        chat = load_hf_tokenizer(tokenizer or size.checkpoint)
        thinking = loaded.protocol.sampling.self_served_seller.thinking
        tags, eos = derive_turn_tags(chat, template_kwargs(thinking)), getattr(chat, "eos_token_id", None)
    config = grpo_config(loaded, plan, settings=env_settings(study, loaded.root, tags), paths=paths,
                         tracking_uri=resolve_tracking_uri(), parent_paths=parent, eos_token_id=eos,
                         prompt_builder=prompt_builder, protocol_hash=protocol_hash(study, loaded.root),
                         gpus_per_node=gpus_per_node, num_nodes=num_nodes)
    written = write_train_config(config, out or paths.config)
    typer.echo(f"wrote {written} (run {plan.run}: {plan.steps} steps from combined step {plan.step_offset})")
    return written
