"""Arms added outside the frozen matrix: ``registry/<study>/arms.yaml``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Mapping

import yaml
from pydantic import Field

from negotiation.errors import ConfigError
from negotiation.protocol import Arm, ArmName, StrictModel, display_path, load_yaml_model
from negotiation.study._layout import registry_dir

__all__ = ["ADDED_ARMS_FILE", "AddedArm", "AddedArms", "added_arms_document", "added_arms_path", "load_added_arms",
           "merge_arms"]

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
