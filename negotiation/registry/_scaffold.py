"""Scaffolding a new deviation entry: the next id, a valid file, nothing overwritten."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml
from pydantic import ValidationError

from negotiation.errors import ConfigError, format_validation_error
from negotiation.protocol import display_path
from negotiation.study import (FILE_NAME, Cell, Deviation, Study, append_to_index, as_study, deviation_filename,
                              key_problems)
from negotiation.registry._scaffold_arm import ArmDraft, draft_added_arm

__all__ = ["new_deviation", "parse_cell"]


def parse_cell(text: str) -> Cell:
    """``arm[:buyer[:domain]]`` (empty parts mean every buyer / domain) as a ``Cell``."""
    parts = text.split(":")
    if len(parts) > 3 or not parts[0]:
        raise ConfigError(f"--cell:{text!r}: expected arm[:buyer[:domain]]")
    parts += [""] * (3 - len(parts))
    return Cell(arm=parts[0], buyer=parts[1] or None, domain=parts[2] or None)


def _next_id(folder: Path) -> int:
    # Count file names too, so a broken entry's number is never handed out twice.
    numbers = [int(m.group(1)) for p in folder.glob("*.yaml") if (m := FILE_NAME.match(p.name))]
    return max(numbers, default=0) + 1


def _check_names(loaded: Study, entry: Deviation, target: str, adding: str | None) -> None:
    """Every arm, buyer and domain the entry names exists in the study, as the audit checks
    (``deviation_arms``): the log is append-only, so a typo written is a typo kept."""
    planned = set(loaded.arms) | ({adding} if adding else set())
    unknown = sorted(entry.named_arms() - planned)
    if unknown:
        raise ConfigError(f"{target}:arms: unknown arms {unknown}; known: {sorted(planned)} (a new arm: "
                          "--add-arm NAME [--like ARM] --set key=value, docs/add-an-arm.md)")
    known = {"buyer": set(loaded.protocol.buyers.evaluation), "domain": set(loaded.protocol.domains.evaluated)}
    for i, cell in enumerate(entry.cells):
        for key, names in known.items():
            value = getattr(cell, key)
            if value is not None and value not in names:
                raise ConfigError(f"{target}:cells.{i}.{key}: unknown {key} {value!r} (--cell {cell.arm}:...); "
                                  f"known: {', '.join(sorted(names))}")


def new_deviation(
    study: str | Study,
    *,
    category: str,
    title: str,
    what_changed: str,
    why: str,
    expected_impact: str,
    arms: Sequence[str] = (),
    cells: Sequence[Cell] = (),
    all_arms: bool = False,
    supersedes: int | None = None,
    source: str | None = None,
    date: dt.date | None = None,
    root: Path | None = None,
    add_arm: str | None = None,
    arm: Mapping[str, Any] | None = None,
    values: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``registry/<study>/deviations/NNNN-slug.yaml`` with the next id; return its path.

    With ``add_arm``, the entry (category ``arm_added``) also adds that arm, with the fields
    ``arm`` (``arm_fields``), to ``registry/<study>/arms.yaml``, citing the new entry. Entry and
    arm are validated (schema, arms named, superseded entry present, the arm's size, read point
    and run) before anything is written, so neither file is ever half made. ``values`` are frozen
    protocol keys (dotted) and the values the covered arms ran with (``effective_protocol``;
    ``run_protocol`` for training). A loaded ``study`` (the command's) is not read again.
    """
    loaded = as_study(study, root)
    root = loaded.root
    if add_arm is not None:
        if category != "arm_added":
            raise ConfigError(f"--category:{category}: an added arm is covered by an arm_added entry")
        arms = [*arms, add_arm] if add_arm not in arms else list(arms)
    folder = loaded.registry.dir / "deviations"
    entry_id = _next_id(folder)
    path = folder / deviation_filename(entry_id, title)
    target = display_path(path, root)
    data = {
        "version": 1, "id": entry_id, "date": (date or dt.date.today()).isoformat(), "title": title,
        "category": category, "all_arms": all_arms, "arms": list(arms),
        "cells": [c.model_dump(exclude_none=True) for c in cells], "what_changed": what_changed, "why": why,
        "expected_impact": expected_impact, "supersedes": supersedes, "source": source,
        "values": dict(values or {}),
    }
    try:
        entry = Deviation.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(target, exc)) from exc
    _check_names(loaded, entry, target, add_arm)
    bad_keys = key_problems(loaded.protocol, entry.values)
    if bad_keys:
        raise ConfigError(f"{target}:{bad_keys[0]}")
    if supersedes is not None and supersedes not in loaded.deviations.entries:
        raise ConfigError(f"{target}:supersedes: no valid entry {supersedes} in {display_path(folder, root)}")
    draft: ArmDraft | None = None
    if add_arm is not None:
        draft = draft_added_arm(loaded, add_arm, arm or {}, entry_id)
    folder.mkdir(parents=True, exist_ok=True)
    body = {k: v for k, v in data.items() if v not in (None, [], False, {})}
    with path.open("x", encoding="utf-8") as handle:  # "x": never overwrite an entry
        yaml.safe_dump(body, handle, sort_keys=False, allow_unicode=True, width=100)
    append_to_index(folder, entry_id, path, root=root)
    if draft is not None:
        draft.write()
    return path
