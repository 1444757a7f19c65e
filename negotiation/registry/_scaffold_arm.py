"""Scaffolding an added arm with the deviation that covers it: ``nego deviation new --add-arm``.

The arm's fields come from an existing arm (``--like``) overridden by ``--set key=value``; the
entry is validated as ``registry/<study>/arms.yaml`` will hold it (schema, names the protocol
defines, runs shared with other arms) before the deviation or the arms file is written, so a
mistake is one ``file:key: reason`` line and nothing on disk changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml
from pydantic import ValidationError

from negotiation._atomic import write_atomic
from negotiation.errors import ConfigError, format_validation_error
from negotiation.protocol import display_path
from negotiation.study import AddedArms, Study, added_arms_document, added_arms_path, arm_problems

__all__ = ["ArmDraft", "arm_fields", "draft_added_arm", "key_values"]

HEADER = ("# Arms the {study} study evaluates outside its frozen matrix (protocol/{study}/arms.yaml), each naming\n"
          "# the deviations that cover it (`nego deviation new {study} --add-arm NAME`).\n")


def arm_fields(study: Study, like: str | None, settings: Sequence[str]) -> dict[str, Any]:
    """The new arm's fields: ``like``'s (without its deviations), then each ``key=value`` of
    ``settings`` with the value read as YAML (``lr_multiple=5`` is a number, ``read_step=null``
    removes a copied key)."""
    fields: dict[str, Any] = {}
    if like is not None:
        if like not in study.arms:
            raise ConfigError(f"--like:{like}: not an arm of study {study.name!r}; known: {sorted(study.arms)}")
        fields = study.arms[like].model_dump(mode="json", exclude_none=True, exclude={"deviations"})
    for key, value in key_values("--set", settings, "lr_multiple=5").items():
        fields[key] = value
        if value is None:
            del fields[key]
    return fields


def key_values(option: str, texts: Sequence[str], example: str) -> dict[str, Any]:
    """``key=value`` options (``--set``, ``--value``) as a dict, each value read as YAML."""
    out: dict[str, Any] = {}
    for text in texts:
        key, sep, raw = text.partition("=")
        if not sep or not key:
            raise ConfigError(f"{option}:{text!r}: expected key=value, e.g. {example}")
        try:
            out[key] = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError as exc:
            raise ConfigError(f"{option}:{key}: cannot read {raw!r} as a YAML value ({exc})") from None
    return out


class ArmDraft:
    """A validated added arm and the text ``registry/<study>/arms.yaml`` will hold with it."""

    def __init__(self, path: Path, name: str, text: str):
        self.path, self.name, self.text = path, name, text

    def write(self) -> Path:
        write_atomic(self.path, self.text)
        return self.path


def _current(study: Study, path: Path, shown: str) -> tuple[str, dict[str, Any]]:
    text, data = added_arms_document(path, shown)
    if text is None:
        return HEADER.format(study=study.name) + f"version: 1\nstudy: {study.name}\nadded_arms: {{}}\n", {}
    return text, data


def _appended(text: str, name: str, fields: Mapping[str, Any]) -> str:
    """``text`` with ``name: fields`` as the last entry under ``added_arms`` (the file's comments kept)."""
    lines = text.rstrip("\n").split("\n")
    lines = ["added_arms:" if line.strip() == "added_arms: {}" else line for line in lines]
    body = yaml.safe_dump({name: dict(fields)}, sort_keys=False, allow_unicode=True, width=100)
    return "\n".join(lines) + "\n" + "".join(f"  {line}\n" for line in body.splitlines())


def draft_added_arm(study: Study, name: str, fields: Mapping[str, Any], entry_id: int) -> ArmDraft:
    """Validate ``name`` with ``fields`` as an added arm citing deviation ``entry_id``; raise
    ``ConfigError`` (``registry/<study>/arms.yaml:added_arms.<name>.<key>: reason``) on any problem."""
    path = added_arms_path(study.name, study.root)
    shown = display_path(path, study.root)
    where = f"{shown}:added_arms.{name}"
    if name in study.frozen_arms:
        raise ConfigError(f"{where}: an arm of that name is already in the frozen matrix "
                          f"{study.show(study.dir / 'arms.yaml')}; give the added arm another name")
    if name in study.added_arms:
        raise ConfigError(f"{where}: already added; to change it, edit the file and log a deviation that amends it")
    text, data = _current(study, path, shown)
    entry = {**fields, "deviations": [entry_id]}
    document = {**data, "added_arms": {**(data.get("added_arms") or {}), name: entry}}
    try:
        added = AddedArms.model_validate(document)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(shown, exc)) from None
    problems = arm_problems(study.protocol, {name: added.added_arms[name]}, other_arms=study.arms, section="added_arms")
    if problems:
        raise ConfigError("\n".join(f"{shown}:{key}: {reason}" for key, reason in problems))
    return ArmDraft(path, name, _appended(text, name, entry))
