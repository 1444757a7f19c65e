"""The ``Study``: ``protocol/<study>/`` (protocol, frozen arm matrix) with the arms and continuation
branches ``registry/<study>/`` adds, loaded and cross-checked once.

``Study.arms`` is the one merge of frozen and added arms every stage, check and table reads; an
added arm reusing a frozen arm's name is an error naming both files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from negotiation.errors import ConfigError
from negotiation.protocol import Arm, ArmMatrix, Protocol, display_path, load_yaml_model
from negotiation.study._arms import AddedArm, added_arms_path, load_added_arms, merge_arms
from negotiation.study._continuations import (
    Branch,
    ContinuationEntry,
    continuation_branches,
    continuation_problems,
    continuations_path,
    load_continuations,
)
from negotiation.study._layout import ResultsLayout, default_root, results_dir, study_dir

__all__ = ["Study", "arm_problems", "load_study", "resolve_read_step"]

PROTOCOL_FILE = "protocol.yaml"
ARMS_FILE = "arms.yaml"
LOCK_FILE = "lock.yaml"


def resolve_read_step(protocol: Protocol, arm: Arm) -> int:
    """Combined optimizer step a trained arm is read at, by its read point or explicit step."""
    if arm.read_step is not None:
        return arm.read_step
    if arm.read_point is None:
        raise ValueError(f"arm of kind {arm.kind!r} has no read point")
    return protocol.recipe_for(arm.size).read_points[arm.read_point]


def _run_problems(key: str, arm: Arm, runs: Mapping[str, Arm], protocol: Protocol) -> list[tuple[str, str]]:
    problems = []
    owner = runs[arm.run]
    for field in ("size", "lr_multiple", "parent_run"):
        if getattr(owner, field) != getattr(arm, field):
            problems.append((f"{key}.{field}", f"{getattr(arm, field)!r} differs from another arm of run "
                             f"{arm.run!r} ({getattr(owner, field)!r})"))
    if arm.parent_run is not None:
        # A parent run no arm reads is an initial run trained only to be continued (the paper's
        # frozen matrix reads the continuations alone), so an unknown name is not an error.
        parent = runs.get(arm.parent_run)
        if parent is not None and parent.parent_run is not None:
            problems.append((f"{key}.parent_run", f"run {arm.parent_run!r} is itself a continuation"))
        elif parent is not None and (parent.size, parent.lr_multiple) != (arm.size, arm.lr_multiple):
            problems.append((f"{key}.parent_run", f"run {arm.parent_run!r} has another size or lr_multiple"))
    recipe = protocol.recipe_for(arm.size) if arm.size in protocol.sizes else protocol.training
    planned = recipe.combined_steps if arm.parent_run else recipe.initial_steps
    step = resolve_read_step(protocol, arm)
    if step > planned or step % recipe.checkpoint_every:
        problems.append((f"{key}.read_step" if arm.read_step is not None else f"{key}.read_point",
                         f"reads combined step {step}, not a checkpoint (every "
                         f"{recipe.checkpoint_every}) of a run planned for {planned} steps"))
    return problems


def unknown_names(protocol: Protocol, name: str, arm: Arm, section: str = "arms") -> list[tuple[str, str]]:
    """``(key, reason)`` when ``arm`` names a size or read point the protocol does not define:
    an arm no reader can resolve (its read step is a look-up in the size's recipe)."""
    if arm.size is not None and arm.size not in protocol.sizes:
        return [(f"{section}.{name}.size", f"unknown size {arm.size!r}; known: {sorted(protocol.sizes)}")]
    points = protocol.recipe_for(arm.size).read_points if arm.size is not None else protocol.training.read_points
    if arm.read_point is not None and arm.read_point not in points:
        return [(f"{section}.{name}.read_point", f"unknown read point {arm.read_point!r}; known: {sorted(points)}")]
    return []


def arm_problems(
    protocol: Protocol, arms: Mapping[str, Arm], *, other_arms: Mapping[str, Arm] | None = None,
    section: str = "arms",
) -> list[tuple[str, str]]:
    """``(key, reason)`` for arms whose size, read point or run does not match the protocol.

    ``other_arms`` (the frozen matrix, when checking added arms) supply runs that ``arms`` may
    continue or share; ``section`` is the file's top-level key the arms sit under.
    """
    problems: list[tuple[str, str]] = []
    runs: dict[str, Arm] = {}
    for arm in list((other_arms or {}).values()) + list(arms.values()):
        if arm.run is not None:
            runs.setdefault(arm.run, arm)
    for name, arm in arms.items():
        unknown = unknown_names(protocol, name, arm, section)
        problems.extend(unknown)
        if arm.kind == "trained" and not unknown:
            problems.extend(_run_problems(f"{section}.{name}", arm, runs, protocol))
    return problems


@dataclass(frozen=True)
class Study:
    """A loaded, cross-checked study: its protocol, every arm (frozen and added) and its branches."""

    name: str
    """Study name (folder under ``protocol/``)."""
    root: Path
    """Repository root."""
    protocol: Protocol
    """The frozen protocol."""
    frozen_arms: dict[str, Arm]
    """The frozen arm matrix (``protocol/<study>/arms.yaml``)."""
    added_arms: dict[str, AddedArm] = field(default_factory=dict)
    """Arms added outside the matrix (``registry/<study>/arms.yaml``), each citing its deviations."""
    continuations: dict[str, ContinuationEntry] = field(default_factory=dict)
    """Continuation runs branching off the protocol's rule (``registry/<study>/continuations.yaml``)."""
    arms: dict[str, Arm] = field(init=False)
    """Every planned arm: frozen, then added (``merge_arms``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "arms", merge_arms(
            self.frozen_arms, self.added_arms, frozen_file=self.show(self.dir / ARMS_FILE),
            added_file=self.show(added_arms_path(self.name, self.root))))

    @property
    def layout(self) -> ResultsLayout:
        """The default results directory's layout (``outputs/<study>`` under the root)."""
        return ResultsLayout(results_dir(self.name, self.root))

    @property
    def out(self) -> str:
        """The results directory relative to the root, as pipeline files name it."""
        return results_dir(self.name, Path()).as_posix()

    def branches(self) -> dict[str, Branch]:
        """Every continuation run with its parent, branch step and step budget: the registry's
        ``continuations.yaml`` entry where there is one, else the protocol's rule."""
        problems = continuation_problems(self, self.arms, self.continuations)
        if problems:
            shown = self.show(continuations_path(self.name, self.root))
            raise ConfigError("\n".join(f"{shown}:{key}: {reason}" for key, reason in problems))
        return continuation_branches(self, self.arms, self.continuations)

    def is_frozen(self, arm: str) -> bool:
        """Whether ``arm`` is in the frozen matrix (else the registry added it)."""
        return arm in self.frozen_arms

    @property
    def dir(self) -> Path:
        return study_dir(self.name, self.root)

    @property
    def lock_path(self) -> Path:
        return self.dir / LOCK_FILE

    def domain_path(self, domain: str) -> Path:
        return self.root / "protocol" / "domains" / f"{domain}.yaml"

    def frozen_files(self) -> list[Path]:
        """Every file the lock covers: protocol, arm matrix and the domain schemas it names."""
        domains = [self.domain_path(d) for d in sorted(self.protocol.domains.evaluated)]
        return [self.dir / PROTOCOL_FILE, self.dir / ARMS_FILE, *domains]

    def show(self, path: Path) -> str:
        """A path as messages show it (relative to the root)."""
        return display_path(path, self.root)

    def read_step(self, arm: str | Arm) -> int:
        """Combined step a trained arm is read at."""
        return resolve_read_step(self.protocol, self.arms[arm] if isinstance(arm, str) else arm)

    def gpu_profile_arms(self) -> set[str]:
        """Arms of sizes whose ``profile`` is ``gpu`` (the ``lm`` ladder's GPU profile): built on one
        GPU by the GPU profile's own stages (``pipelines/<study>/gpu/dvc.yaml``, results in
        ``outputs/<study>-gpu``); the CPU profile's plan, validate, analyze and report stages leave
        them out; the audit requires their contrasts only of a results folder that holds them."""
        sizes = {k for k, v in self.protocol.sizes.items() if getattr(v, "profile", None) == "gpu"}
        return {name for name, arm in self.arms.items() if arm.size in sizes}


def _raise(shown: str, problems: list[tuple[str, str]]) -> None:
    if problems:
        raise ConfigError("\n".join(f"{shown}:{key}: {reason}" for key, reason in problems))


def _registry_part(study: str, root: Path) -> tuple[dict[str, AddedArm], dict[str, ContinuationEntry]]:
    """The added arms and continuation entries of ``registry/<study>/``; any file problem raises."""
    problems: list[str] = []
    added = load_added_arms(added_arms_path(study, root), study, root, problems)
    continuations = load_continuations(continuations_path(study, root), study, root, problems)
    if problems:
        raise ConfigError("\n".join(problems))
    return added, continuations


def load_study(study: str, root: Path | None = None, *, registry: bool = True) -> Study:
    """Load and cross-check ``protocol/<study>/`` and the arms and branches ``registry/<study>/``
    adds; raise ``ConfigError`` naming file and key. ``registry=False`` reads the frozen part only
    (the lock covers it, so a registry mistake does not read as a changed protocol)."""
    root = Path(root or default_root())
    folder = study_dir(study, root)
    if not folder.is_dir():
        known = sorted(p.name for p in folder.parent.iterdir() if (p / PROTOCOL_FILE).exists()) \
            if folder.parent.is_dir() else []
        raise ConfigError(f"{display_path(folder, root)}:<study>: no study {study!r}; known: {known}")
    protocol = load_yaml_model(Protocol, folder / PROTOCOL_FILE, root=root)
    arms = load_yaml_model(ArmMatrix, folder / ARMS_FILE, root=root)
    shown_protocol = display_path(folder / PROTOCOL_FILE, root)
    shown_arms = display_path(folder / ARMS_FILE, root)
    problems = [(key, reason) for key, reason in protocol.design_problems()]
    if protocol.study != study:
        problems.append(("study", f"{protocol.study!r} differs from the folder name {study!r}"))
    for group in ("training", "held_out"):
        for i, name in enumerate(getattr(protocol.domains, group)):
            path = root / "protocol" / "domains" / f"{name}.yaml"
            if not path.is_file():
                problems.append((f"domains.{group}.{i}", f"no domain file {display_path(path, root)} for {name!r}"))
    for i, contrast in enumerate(protocol.statistics.primary_family):
        for field in ("arm", "reference"):
            if getattr(contrast, field) not in arms.arms:
                problems.append((f"statistics.primary_family.{i}.{field}",
                                 f"{getattr(contrast, field)!r} is not an arm of {shown_arms}"))
    _raise(shown_protocol, problems)
    arm_issues = arm_problems(protocol, arms.arms)
    if arms.study != study:
        arm_issues.append(("study", f"{arms.study!r} differs from the folder name {study!r}"))
    _raise(shown_arms, arm_issues)
    if not registry:
        return Study(study, root, protocol, dict(arms.arms))
    added, continuations = _registry_part(study, root)
    # The audit reports an added arm's other problems as findings; these two leave it unreadable.
    _raise(display_path(added_arms_path(study, root), root),
           [p for name, arm in added.items() for p in unknown_names(protocol, name, arm, "added_arms")])
    return Study(study, root, protocol, dict(arms.arms), added, continuations)
