"""Where each continuation run branches from its parent, as data.

The protocol's rule (``read_rule.continuation_branch``) branches a continuation from its
parent's final checkpoint, ``training.initial_steps``, and trains it to ``combined_steps``. A
study that branched elsewhere (the paper: the 4.5B and 31B initial runs lost step 64, so their
continuations branch at 56 and run 48 steps) records it in
``registry/<study>/continuations.yaml``::

    version: 1
    study: paper
    continuations:
      e4b_shared_cont: {branch_step: 56, reason: "...", deviations: [8]}

``continuation_branches`` resolves every continuation run of the planned arms to its parent run,
branch step and step budget; the pipeline plan, the trainers and the select stage read that one
resolution, and the audit checks the records against it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Mapping

from pydantic import Field

from negotiation.errors import ConfigError
from negotiation.protocol import Arm, StrictModel, display_path, load_yaml_model
from negotiation.study._layout import registry_dir

if TYPE_CHECKING:  # a type only: the Study is built from these entries
    from negotiation.study._study import Study

__all__ = ["Branch", "ContinuationEntry", "Continuations", "continuation_branches", "continuation_problems",
           "continuations_path", "load_continuations"]

CONTINUATIONS_FILE = "continuations.yaml"
"""Under ``registry/<study>/``."""


class ContinuationEntry(StrictModel):
    """A continuation run that branches somewhere other than the protocol's rule."""

    branch_step: int = Field(gt=0)
    """Step of the parent run the continuation starts from (its step 0 is this combined step)."""
    reason: str = Field(min_length=3)
    """Why it branches there."""
    deviations: tuple[int, ...] = Field(min_length=1)
    """Ids of the deviation entries that cover the branch (``recipe_change`` or ``checkpoint_substitution``)."""


class Continuations(StrictModel):
    """``registry/<study>/continuations.yaml``."""

    version: Literal[1]
    """File format version."""
    study: str
    """Study name; equals the folder name."""
    continuations: dict[str, ContinuationEntry] = Field(default_factory=dict)
    """Entries keyed by continuation run name."""


class Branch(StrictModel):
    """One continuation run, resolved."""

    run: str
    """Continuation run name."""
    parent_run: str
    """Run it continues."""
    branch_step: int = Field(gt=0)
    """Parent step it starts from (= the combined step of its own step 0)."""
    steps: int = Field(gt=0)
    """Own optimizer steps it trains: ``combined_steps - branch_step``."""
    rule: bool
    """True when the branch is the protocol's rule (no registry entry)."""
    deviations: tuple[int, ...] = ()
    """Deviations the registry entry cites (empty under the rule)."""


def _continuation_arms(arms: Mapping[str, Arm]) -> list[Arm]:
    """The trained arms whose run continues another run (the one rule both maps below read)."""
    return [a for a in arms.values() if a.kind == "trained" and a.run and a.parent_run]


def _continuation_runs(arms: Mapping[str, Arm]) -> dict[str, str]:
    return {a.run: a.parent_run for a in _continuation_arms(arms)}


def _run_recipes(study: Study, arms: Mapping[str, Arm]) -> dict[str, Any]:
    """The recipe each continuation run trains with: its size's (``Protocol.recipe_for``), so a
    GPU-profile size branches on ``gpu_training``'s steps."""
    return {a.run: study.protocol.recipe_for(a.size) for a in _continuation_arms(arms)}


def continuation_problems(study: Study, arms: Mapping[str, Arm],
                          entries: Mapping[str, ContinuationEntry]) -> list[tuple[str, str]]:
    """``(key, reason)`` for entries naming no continuation run or an impossible branch step."""
    runs, recipes = _continuation_runs(arms), _run_recipes(study, arms)
    problems = []
    for run, entry in sorted(entries.items()):
        key = f"continuations.{run}"
        if run not in runs:
            problems.append((key, f"{run!r} is not a continuation run of the planned arms; continuations: {sorted(runs)}"))
            continue
        recipe = recipes[run]
        if not 0 < entry.branch_step < recipe.combined_steps or entry.branch_step % recipe.checkpoint_every:
            problems.append((f"{key}.branch_step", f"{entry.branch_step} is not a saved parent step (every "
                                                   f"{recipe.checkpoint_every}, below {recipe.combined_steps})"))
    return problems


def continuation_branches(study: Study, arms: Mapping[str, Arm],
                          entries: Mapping[str, ContinuationEntry]) -> dict[str, Branch]:
    """Every continuation run of ``arms`` with its branch: the registry entry's, else the rule's."""
    recipes = _run_recipes(study, arms)
    branches = {}
    for run, parent in sorted(_continuation_runs(arms).items()):
        entry, recipe = entries.get(run), recipes[run]
        step = entry.branch_step if entry else recipe.initial_steps
        branches[run] = Branch(run=run, parent_run=parent, branch_step=step, steps=recipe.combined_steps - step,
                               rule=entry is None, deviations=entry.deviations if entry else ())
    return branches


def continuations_path(study: str, root: Path) -> Path:
    """``registry/<study>/continuations.yaml``."""
    return registry_dir(study, root) / CONTINUATIONS_FILE


def load_continuations(path: Path, study: str, root: Path, problems: list[str]) -> dict[str, ContinuationEntry]:
    """The valid entries of ``path`` (none when it is absent); file problems go to ``problems``."""
    if not path.exists():
        return {}
    try:
        loaded = load_yaml_model(Continuations, path, root=root)
    except ConfigError as exc:
        problems.extend(str(exc).splitlines())
        return {}
    if loaded.study != study:
        problems.append(f"{display_path(path, root)}:study: {loaded.study!r} differs from {study!r}")
    return dict(loaded.continuations)
