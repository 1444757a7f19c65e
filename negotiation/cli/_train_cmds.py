"""``nego train-config STUDY ARM``: write the NeMo-RL GRPO YAML of an arm's training run."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from negotiation.training.nemo import DEFAULT_PROMPT_BUILDER, write_run_config

__all__ = ["train_config"]


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
) -> None:
    """Write the NeMo-RL GRPO config of ARM's training run from the frozen protocol."""
    written, plan = write_run_config(
        study, arm, out=out, runs_dir=runs_dir, tokenizer=tokenizer, use_tokenizer=not no_tokenizer,
        parent_step=parent_step, seed=seed, gpus_per_node=gpus_per_node, num_nodes=num_nodes,
        prompt_builder=prompt_builder, root=root)
    typer.echo(f"wrote {written} (run {plan.run}: {plan.steps} steps from combined step {plan.step_offset})")

