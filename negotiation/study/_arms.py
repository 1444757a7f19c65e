"""Arms added outside the frozen matrix (``registry/<study>/arms.yaml``), and whether arms fit the
protocol: sizes and read points it defines, runs their arms agree on, read steps at a checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Mapping

import yaml
from pydantic import Field

from negotiation.errors import ConfigError
from negotiation.protocol import Arm, ArmName, Protocol, StrictModel, display_path, load_yaml_model
from negotiation.study._layout import registry_dir

__all__ = ["ADDED_ARMS_FILE", "AddedArm", "AddedArms", "added_arms_document", "added_arms_path", "arm_entry_as_written",
           "arm_problems",
           "load_added_arms", "merge_arms", "resolve_read_step", "unknown_names"]

ADDED_ARMS_FILE = "arms.yaml"
"""Under ``registry/<study>/``."""


class AddedArm(Arm):
    """An arm evaluated outside the frozen matrix; it names the deviations that add it."""

    deviations: tuple[int, ...] = Field(min_length=1)
    """Ids of the entries that cover this arm (at least one of category ``arm_added``)."""


class AddedArms(StrictModel):
    """``registry/<study>/arms.yaml``."""

    version: Literal[1]
    """File format version."""
    study: str
    """Study name; equals the folder name."""
    added_arms: dict[ArmName, AddedArm] = Field(default_factory=dict)
    """Added arms keyed by name (a key other than ``arms``, so DVC can read both files as vars)."""


def added_arms_path(study: str, root: Path) -> Path:
    """``registry/<study>/arms.yaml``."""
    return registry_dir(study, root) / ADDED_ARMS_FILE


def load_added_arms(path: Path, study: str, root: Path, problems: list[str]) -> dict[str, AddedArm]:
    """The valid added arms of ``path`` (none when it is absent); file problems go to ``problems``."""
    if not path.exists():
        return {}
    try:
        added = load_yaml_model(AddedArms, path, root=root)
    except ConfigError as exc:
        problems.extend(str(exc).splitlines())
        return {}
    if added.study != study:
        problems.append(f"{display_path(path, root)}:study: {added.study!r} differs from {study!r}")
    return dict(added.added_arms)


def added_arms_document(path: Path, shown: str) -> tuple[str | None, dict[str, Any]]:
    """``registry/<study>/arms.yaml`` as text (its comments, for a writer appending to it) and as
    a mapping; ``(None, {})`` when absent. ``ConfigError`` when ``added_arms`` is not a mapping."""
    if not path.exists():
        return None, {}
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict) or not isinstance(data.get("added_arms") or {}, dict):
        raise ConfigError(f"{shown}:added_arms: not a mapping; fix the file before adding an arm")
    return text, data


def arm_entry_as_written(root: Path, params_file: str, params_key: str, cache: dict[str, Any]) -> Any:
    """An arm's entry as its arms file holds it (``protocol/<study>/arms.yaml`` or the registry's),
    for generated files that copy it verbatim; ``cache`` holds each file read once."""
    if params_file not in cache:
        cache[params_file] = yaml.safe_load((Path(root) / params_file).read_text(encoding="utf-8"))
    node = cache[params_file]
    for part in params_key.split("."):
        node = node[part]
    return node


def merge_arms(frozen: Mapping[str, Arm], added: Mapping[str, AddedArm], *, frozen_file: str,
               added_file: str) -> dict[str, Arm]:
    """Frozen arms then added arms, by name: THE merge every reader uses (``Study.arms``).

    An added arm may not reuse a frozen arm's name: that is an error naming both files, never a
    silent choice of one definition.
    """
    clash = sorted(set(frozen) & set(added))
    if clash:
        raise ConfigError("\n".join(f"{added_file}:added_arms.{name}: an arm of that name is already in the "
                                    f"frozen matrix {frozen_file}; give the added arm another name"
                                    for name in clash))
    return {**frozen, **added}


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
    recipe = protocol.recipe_for(arm.size)
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
    points = protocol.recipe_for(arm.size).read_points
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
