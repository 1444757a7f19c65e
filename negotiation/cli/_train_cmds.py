"""``nego train-config STUDY ARM``: write the NeMo-RL GRPO YAML of an arm's training run;
``nego learn-task TASK``: run one task of the token trainer's learning ladder."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from negotiation.training.nemo import DEFAULT_PROMPT_BUILDER, write_run_config

__all__ = ["learn_task", "train_config"]


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


def learn_task(
    task: str = typer.Argument(..., help="Task of protocol/<study>/learning.yaml, e.g. format, opening."),
    study: str = typer.Option("lm", "--study", help="Study whose learning ladder and protocol are read."),
    device: str = typer.Option("cpu", "--device", help="cpu runs the task's cpu budget; cuda its gpu budget."),
    size: Optional[str] = typer.Option(None, "--size", help="Size of the budget; default its first."),
    out: Path = typer.Option(Path("outputs/learning"), "--out", help="Folder of the tokenizer, bases and runs."),
    threads: int = typer.Option(2, "--threads", help="torch CPU threads."),
    root: Optional[Path] = typer.Option(None, "--root", help="Repository root holding protocol/."),
) -> None:
    """Run one learning-ladder task end to end; print its verdict; exit 1 when it fails."""
    import json

    from negotiation.protocol import load_learning
    from negotiation.study import load_study
    from negotiation.training.lm import LmRuntime, run_learning_task

    loaded = load_study(study, root)
    ladder = load_learning(loaded.protocol, loaded.root)
    machine = "cpu" if device == "cpu" else "gpu"
    runtime = LmRuntime(device=device, dtype="float32" if machine == "cpu" else "bfloat16", threads=threads)
    verdict = run_learning_task(loaded.protocol, ladder, task, machine=machine, out=out, size=size, runtime=runtime)
    typer.echo(json.dumps({k: v for k, v in verdict.items() if k != "criteria"}, sort_keys=True))
    for c in verdict["criteria"]:
        typer.echo(f"{c['metric']}: first {c['first_mean']:.4f} -> last {c['last_mean']:.4f} (change "
                   f"{c['change']:+.4f}, needs {c['direction']} >= {c['min_change']}): "
                   f"{'pass' if c['passed'] else 'FAIL'}")
    if not verdict["passed"]:
        raise typer.Exit(1)
