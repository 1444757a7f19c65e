"""The arm matrix: one entry per evaluated seller, keyed by arm name (DVC ``foreach`` needs a mapping)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from negotiation.protocol._files import StrictModel
from negotiation.protocol._schema_env import check_spec

__all__ = ["Arm", "ArmMatrix", "ArmName", "PLACEHOLDERS", "fill_seller"]

_ARM_NAME = re.compile(r"^[a-z0-9][a-z0-9_]*$")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")

PLACEHOLDERS = {
    "base": "the size's base checkpoint (sizes.<size>.checkpoint)",
    "checkpoint": "the checkpoint directory the read-point rule selects for the arm",
}
_ALLOWED = {"base": {"base"}, "trained": {"checkpoint"}, "reference": set()}


def _check_arm_name(name: str) -> str:
    if not _ARM_NAME.match(name):
        raise ValueError(f"arm name {name!r} must be lower-case letters, digits and underscores")
    return name


ArmName = Annotated[str, AfterValidator(_check_arm_name)]


def fill_seller(template: str, **values: str) -> str:
    """Replace ``{base}`` / ``{checkpoint}`` in a seller template by the given values."""
    missing = sorted(set(_PLACEHOLDER.findall(template)) - set(values))
    if missing:
        raise KeyError(f"seller template {template!r} needs values for {missing}")
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


class Arm(StrictModel):
    """One seller arm: what it is, how its seller is obtained, and where it is read."""

    kind: Literal["base", "trained", "reference"]
    """``base``: an untrained size; ``trained``: a checkpoint of a training run; ``reference``: a fixed seller."""
    description: str = Field(min_length=1)
    """One line a reader understands without the rest of the file."""
    size: str | None = None
    """Key into the protocol's ``sizes`` (base and trained arms)."""
    lr_multiple: float | None = Field(default=None, gt=0)
    """Learning rate as a multiple of the shared rate (trained arms)."""
    run: str | None = None
    """Training run the arm reads a checkpoint of (trained arms); arms may share a run."""
    parent_run: str | None = None
    """Run this run continues from (continuations only)."""
    read_point: str | None = None
    """Name of a ``training.read_points`` entry: the combined step to read."""
    read_step: int | None = Field(default=None, ge=0)
    """Explicit combined step to read, when no named read point applies."""
    read_reason: str | None = Field(default=None, min_length=3)
    """Why the arm is read at an explicit ``read_step`` rather than one of the protocol's named
    ``training.read_points`` (e.g. the paper's reads at step 56 after an upload fault). The audit
    requires it, and a covering deviation, for every arm with a ``read_step``."""
    seller: str
    """Seller spec; ``{base}`` (base arms) or ``{checkpoint}`` (trained arms) are filled in at run time."""

    @model_validator(mode="after")
    def _shape(self) -> "Arm":
        used = set(_PLACEHOLDER.findall(self.seller))
        allowed = _ALLOWED[self.kind]
        if used - allowed:
            raise ValueError(f"seller of a {self.kind} arm may not use {sorted(used - allowed)}")
        check_spec(_PLACEHOLDER.sub("x", self.seller))
        trained_fields = {"lr_multiple": self.lr_multiple, "run": self.run, "parent_run": self.parent_run,
                          "read_point": self.read_point, "read_step": self.read_step,
                          "read_reason": self.read_reason}
        if self.kind == "trained":
            return self._check_trained(used)
        extra = sorted(k for k, v in trained_fields.items() if v is not None)
        if extra:
            raise ValueError(f"a {self.kind} arm has no training run; remove {extra}")
        if self.kind == "base" and self.size is None:
            raise ValueError("a base arm needs a size")
        if self.kind == "reference" and self.size is not None:
            raise ValueError("a reference arm has no size")
        return self

    def _check_trained(self, used: set[str]) -> "Arm":
        missing = [k for k in ("size", "lr_multiple", "run") if getattr(self, k) is None]
        if missing:
            raise ValueError(f"a trained arm needs {missing}")
        if (self.read_point is None) == (self.read_step is None):
            raise ValueError("a trained arm needs exactly one of read_point, read_step")
        if "checkpoint" not in used:
            raise ValueError("the seller of a trained arm must use {checkpoint}")
        if self.parent_run is not None and self.parent_run == self.run:
            raise ValueError(f"run {self.run!r} cannot continue itself")
        return self

    def defining(self, run: str) -> "Arm":
        """This trained arm's entry as the definition of training run ``run``: itself when it
        trains ``run``; when it only continues ``run`` (a run trained only to be continued), the
        same entry with ``run`` as its own run and no parent. Every trainer and planner reads a
        run's recipe, size and rate through this one rule."""
        if self.kind != "trained" or run not in (self.run, self.parent_run):
            raise ValueError(f"arm {self!r} does not define run {run!r}")
        return self if run == self.run else self.model_copy(update={"run": run, "parent_run": None})


class ArmMatrix(StrictModel):
    """``protocol/<study>/arms.yaml``: the frozen arm matrix."""

    version: Literal[1]
    """File format version."""
    study: str
    """Study name; equals the folder name."""
    arms: dict[ArmName, Arm] = Field(min_length=1)
    """Arms keyed by name; stage names are ``<stage>@<arm>``."""
