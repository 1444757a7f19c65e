"""Arms added outside the frozen matrix: ``registry/<study>/arms.yaml``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from negotiation.errors import ConfigError
from negotiation.protocol import Arm, ArmName, StrictModel, display_path, load_yaml_model
from negotiation.study._study import default_root

__all__ = ["AddedArm", "AddedArms", "load_added_arms", "registry_dir"]


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


def registry_dir(study: str, root: Path | None = None) -> Path:
    """``<root>/registry/<study>``."""
    return Path(root or default_root()) / "registry" / study


def load_added_arms(path: Path, study: str, root: Path, problems: list[str]) -> dict[str, AddedArm]:
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


