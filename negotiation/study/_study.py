"""The ``Study``: ``protocol/<study>/`` (protocol, frozen arm matrix) with ``registry/<study>/``
(added arms, continuation branches, deviations, sign-offs), loaded and cross-checked once.

A stage script or ``nego`` command calls ``load_study`` once and passes the ``Study`` down; no
module outside this package reads ``protocol/`` or ``registry/`` files. ``Study.arms`` is the one
merge of frozen and added arms every stage, check and table reads; an added arm reusing a frozen
arm's name is an error naming both files.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any
from pathlib import Path

from negotiation.errors import ConfigError
from negotiation.protocol import Arm, ArmMatrix, Protocol, display_path, load_yaml_model
from negotiation.study._arms import (AddedArm, added_arms_path, arm_problems, merge_arms, resolve_read_step,
                                     unknown_names)
from negotiation.study._continuations import (
    Branch,
    ContinuationEntry,
    continuation_branches,
    continuation_problems,
    continuations_path,
)
from negotiation.study._deviation import DeviationLog
from negotiation.study._effective import (effective_protocol, run_owners, run_protocol, run_recipe_values,
                                          size_value_problem)
from negotiation.study._layout import ResultsLayout, default_root, results_dir, study_dir
from negotiation.study._lockfile import LOCK_FILE, LockError, lock_file_problems
from negotiation.study._panel import Panel, panel_path, panel_problems
from negotiation.study._registry import Registry, SignOff, load_registry

__all__ = ["Study", "as_study", "load_study"]

PROTOCOL_FILE = "protocol.yaml"
ARMS_FILE = "arms.yaml"


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
    registry: Registry | None = None
    """``registry/<study>/`` as read (deviations, sign-offs, file problems); empty when not given."""
    profile: str = "cpu"
    """The hardware profile whose results this study reads: ``protocol`` is the file's protocol
    ``for_profile(profile)`` (the GPU profile's own evaluation design, where it has one)."""
    arms: dict[str, Arm] = field(init=False)
    """Every planned arm: frozen, then added (``merge_arms``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "arms", merge_arms(
            self.frozen_arms, self.added_arms, frozen_file=self.show(self.dir / ARMS_FILE),
            added_file=self.show(added_arms_path(self.name, self.root))))
        if self.registry is None:
            object.__setattr__(self, "registry", Registry(self.root, self.name, DeviationLog(),
                                                          dict(self.added_arms), {}, dict(self.continuations)))

    @property
    def panel(self) -> Panel | None:
        """The exploratory buyer panel (``registry/<study>/panel.yaml``), if the study has one."""
        return self.registry.panel

    @property
    def deviations(self) -> DeviationLog:
        """The valid deviation entries (``registry/<study>/deviations/``)."""
        return self.registry.deviations

    @property
    def signoffs(self) -> dict[str, SignOff]:
        """Hand-read sign-offs by arm (``registry/<study>/signoffs/``)."""
        return self.registry.signoffs

    @property
    def turn_cap(self) -> int:
        """Turns an episode may last (``Environment.turn_cap``: 2 x max_rounds)."""
        return self.protocol.environment.turn_cap

    def effective_protocol(self, arm: str) -> Protocol:
        """The protocol ``arm`` ran under: the frozen one with its deviations' ``values`` applied."""
        cache = self.__dict__.setdefault("_effective", {})
        if arm not in cache:
            cache[arm] = effective_protocol(self.protocol, self.registry, arm)
        return cache[arm]

    def run_owners(self, run: str) -> list[str]:
        """The arms whose entry defines training run ``run`` (``run_owners``): those training it,
        else (a run trained only to be continued) those continuing it; empty for no run."""
        return run_owners(self.arms, run)

    def size_value_problem(self, arm: str) -> str | None:
        """Why the deviation values covering ``arm`` change its size's built-once fields, or None
        (``size_value_problem``: every arm of an lm or policy size starts from one ``init@<size>``)."""
        return size_value_problem(self, arm)

    def run_protocol(self, run: str) -> Protocol:
        """The protocol training run ``run`` trains under (``run_protocol``): the frozen one with the
        values of the deviations covering the arms that define it, which must agree."""
        cache = self.__dict__.setdefault("_run_protocols", {})
        if run not in cache:
            cache[run] = run_protocol(self, run)
        return cache[run]

    def run_values(self, run: str) -> dict[str, Any]:
        """The deviation values of run ``run``'s recipe section (``run_recipe_values``): what the plan
        records beside the run so that recording one reruns that run."""
        return run_recipe_values(self, run)

    @cached_property
    def guard_thresholds(self):
        """``registry/<study>/guards.yaml`` (``GuardThresholds``), or None; ConfigError when malformed."""
        from negotiation.study._guards import load_guard_thresholds

        return load_guard_thresholds(self.name, self.root)

    @cached_property
    def guard_rules(self):
        """The frozen thresholds merged with ``guard_thresholds`` (``GuardRules``)."""
        from negotiation.study._guards import resolve_guards

        return resolve_guards(self.protocol, self.guard_thresholds)

    @cached_property
    def prices(self):
        """``registry/<study>/prices.yaml`` (``TokenPrices``), or None when the study has none."""
        from negotiation.study._prices import load_token_prices

        return load_token_prices(self.name, self.root)

    @cached_property
    def learning(self):
        """``protocol/<study>/learning.yaml`` (the learning ladder); ConfigError when absent."""
        from negotiation.protocol import load_learning

        return load_learning(self.protocol, self.root)

    @cached_property
    def lock_state(self):
        """The lock (or None) and every difference between it and the frozen files, read once."""
        return lock_file_problems(self.name, self.root, self.lock_coverage)

    @cached_property
    def lock_hash(self) -> str:
        """The verified protocol hash every run records; ``LockError`` when the frozen files changed."""
        lock, problems = self.lock_state
        if problems or lock is None:
            raise LockError("\n".join(problems))
        return lock.protocol_hash

    def lock_coverage(self, lock, shown_lock: str) -> list[str]:
        """Frozen files of this study the lock misses, and lock entries that are none of them."""
        expected = {self.show(p) for p in self.frozen_files()}
        problems = [f"{path}:<file>: frozen file not in the lock {shown_lock}" for path in sorted(expected - set(lock.files))]
        problems += [f"{shown_lock}:files.{path}: not a frozen file of the study" for path in sorted(set(lock.files) - expected)]
        return problems

    @property
    def layout(self) -> ResultsLayout:
        """The default results directory's layout (``outputs/<study>`` under the root; the GPU
        profile's ``outputs/<study>-gpu``)."""
        return ResultsLayout(results_dir(self.name, self.root, self.profile))

    @property
    def out(self) -> str:
        """The results directory relative to the root, as pipeline files name it."""
        return results_dir(self.name, Path(), self.profile).as_posix()

    def branches(self) -> dict[str, Branch]:
        """Every continuation run with its parent, branch step and step budget: the registry's
        ``continuations.yaml`` entry where there is one, else the protocol's rule."""
        problems = continuation_problems(self, self.arms, self.continuations)
        if problems:
            shown = self.show(continuations_path(self.name, self.root))
            raise ConfigError("\n".join(f"{shown}:{key}: {reason}" for key, reason in problems))
        return continuation_branches(self, self.arms, self.continuations)

    def restricted(self, arms: set[str]) -> Study:
        """This study with only ``arms`` planned, keeping what it already read (lock hash, guard
        thresholds, prices, effective protocols): a scoped study reads no file again."""
        scoped = replace(self, frozen_arms={k: v for k, v in self.frozen_arms.items() if k in arms},
                         added_arms={k: v for k, v in self.added_arms.items() if k in arms})
        scoped.__dict__.update({k: v for k, v in self.__dict__.items() if k not in scoped.__dict__})
        return scoped

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

    def in_profile(self, profile: str) -> Study:
        """This study reading ``profile``'s results (``Protocol.for_profile``); from a study loaded
        for ``cpu`` (the file's protocol), or the same profile."""
        if profile == self.profile:
            return self
        if self.profile != "cpu":
            raise ValueError(f"a study loaded for profile {self.profile!r} cannot read {profile!r}")
        return replace(self, protocol=self.protocol.for_profile(profile), profile=profile)

    def results_profile(self, results: Path) -> str:
        """The profile whose results ``results`` holds: ``gpu`` for the GPU profile's folder
        (``outputs/<study>-gpu``) and for any folder holding a GPU-profile arm's evaluation or run
        (a kept copy of it), else ``cpu``. Each profile builds in its own folder."""
        gpu = self.gpu_profile_arms()
        if not gpu:
            return "cpu"
        if Path(results).resolve() == results_dir(self.name, self.root, "gpu").resolve():
            return "gpu"
        layout = ResultsLayout(Path(results))
        runs = {self.arms[arm].run for arm in gpu if self.arms[arm].kind == "trained"}
        held = any(layout.evaluate(arm).exists() for arm in gpu) or any(layout.train(run).exists() for run in runs)
        return "gpu" if held else "cpu"

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


def as_study(study: str | Study, root: Path | None = None) -> Study:
    """``study`` itself when loaded, else ``load_study(study, root)``: library functions accept a
    name for callers outside a stage or command; entry points load once and pass the ``Study``."""
    return study if isinstance(study, Study) else load_study(study, root)


def load_study(study: str, root: Path | None = None, *, registry: bool = True, profile: str = "cpu") -> Study:
    """Load and cross-check ``protocol/<study>/`` and ``registry/<study>/``; raise ``ConfigError``
    naming file and key (an unreadable added arm or continuation; other registry problems are kept
    in ``.registry.problems`` for the audit). Call it once per process and pass the ``Study`` down.
    ``registry=False`` reads the frozen part only (the lock covers it, so a registry mistake does
    not read as a changed protocol). ``profile``: the hardware profile whose results are read
    (``Protocol.for_profile``; the GPU profile's stages and commands pass ``gpu``)."""
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
    protocol = protocol.for_profile(profile)
    if not registry:
        return Study(study, root, protocol, dict(arms.arms), profile=profile)
    registry_part = load_registry(study, root)
    if registry_part.unreadable:
        raise ConfigError("\n".join(registry_part.unreadable))
    added = registry_part.added
    # The audit reports an added arm's other problems as findings; these two leave it unreadable.
    _raise(display_path(added_arms_path(study, root), root),
           [p for name, arm in added.items() for p in unknown_names(protocol, name, arm, "added_arms")])
    if registry_part.panel is not None:
        _raise(display_path(panel_path(study, root), root), panel_problems(registry_part.panel, protocol))
    return Study(study, root, protocol, dict(arms.arms), added, registry_part.continuations, registry_part, profile)
