"""The protocol an arm actually ran under: the frozen one with its deviations' ``values`` applied.

The frozen protocol holds what was frozen before any arm ran (the paper: 31B served on two
accelerators). A departure that changes a number is a deviation with ``values`` (entry 17: the
31B arms on four); the pipeline serves and evaluates each arm under ``effective_protocol``, and
the report reads the same function, so the departed value lives in the registry alone. A training
run trains under ``run_protocol``: its arms' effective protocol, which they must agree on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from negotiation.errors import ConfigError
from negotiation.protocol import Protocol
from negotiation.study._registry import Registry

__all__ = ["RUN_SHAPE", "effective_protocol", "key_problems", "run_owners", "run_protocol", "run_recipe_values",
           "size_value_problem", "value_problems"]

RUN_SHAPE = ("initial_steps", "combined_steps", "checkpoint_every", "read_points", "seeds_per_arm")
"""Recipe keys the plan, read points and continuations take from the frozen protocol: a deviation's
value may not change them for a run (a different branch is a continuation entry; else re-freeze)."""


def _get(obj: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(obj, dict) and part in obj:
            obj = obj[part]
        elif isinstance(obj, BaseModel) and part in type(obj).model_fields:
            obj = getattr(obj, part)
        else:
            raise KeyError(part)
    return obj


def _set(obj: Any, parts: list[str], value: Any) -> Any:
    """A copy of ``obj`` with the value at ``parts`` replaced (models and dicts alike)."""
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    if isinstance(obj, dict):
        return {**obj, head: _set(obj[head], rest, value)}
    return obj.model_copy(update={head: _set(getattr(obj, head), rest, value)})


def key_problems(protocol: Protocol, values: Mapping[str, Any]) -> list[str]:
    """``values.<key>: reason`` for each dotted key of ``values`` naming no frozen protocol key."""
    problems = []
    for key in values:
        try:
            _get(protocol, key.split("."))
        except KeyError as exc:
            problems.append(f"values.{key}: no protocol key {exc.args[0]!r} there")
    return problems


def value_problems(protocol: Protocol, registry: Registry) -> list[str]:
    """``file:values.<key>: reason`` for deviation values naming no frozen protocol key."""
    return [f"{registry.show(registry.deviations.paths[entry_id])}:{problem}"
            for entry_id, entry in sorted(registry.deviations.entries.items())
            for problem in key_problems(protocol, entry.values)]


def effective_protocol(protocol: Protocol, registry: Registry, arm: str) -> Protocol:
    """``protocol`` with the ``values`` of every active deviation covering ``arm`` applied, by id."""
    for entry in registry.deviations.active():
        if not (entry.values and entry.covers(arm)):
            continue
        shown = registry.show(registry.deviations.paths[entry.id])
        for key, value in entry.values.items():
            try:
                _get(protocol, key.split("."))
                protocol = _set(protocol, key.split("."), value)
            except KeyError as exc:
                raise ConfigError(f"{shown}:values.{key}: no protocol key {exc.args[0]!r} there") from exc
        try:
            protocol = Protocol.model_validate(protocol.model_dump())
        except ValidationError as exc:
            raise ConfigError(f"{shown}:values: the protocol with these values is invalid: "
                              f"{exc.errors()[0]['msg']}") from exc
    return protocol


def run_owners(arms: Mapping[str, Any], run: str) -> list[str]:
    """The arms whose entry defines ``run``: those training it, else (a run trained only to be
    continued) those continuing it."""
    own = sorted(n for n, a in arms.items() if a.kind == "trained" and a.run == run)
    return own or sorted(n for n, a in arms.items() if a.kind == "trained" and a.parent_run == run)


def size_value_problem(study: Any, arm: str) -> str | None:
    """Why the deviation values covering ``arm`` may not stand, or None: a size whose base
    ``init@<size>`` builds once (``BUILT_ONCE``: the lm ladder, the demo policies) is shared by every
    arm and run of that size, so a value may not change one of its fields for some arms only."""
    size = study.arms[arm].size
    frozen = study.protocol.sizes.get(size) if size else None
    if frozen is None or not getattr(frozen, "BUILT_ONCE", False):
        return None
    mine = study.effective_protocol(arm).sizes[size]
    for field in type(frozen).model_fields:
        if getattr(mine, field) != getattr(frozen, field):
            return (f"registry/{study.name}/deviations: a value gives arm {arm!r} sizes.{size}.{field} "
                    f"{getattr(mine, field)!r}, frozen {getattr(frozen, field)!r}: every arm of size {size!r} "
                    f"starts from the one init@{size}, so a size's own fields change only by a re-freeze")
    return None


def run_protocol(study: Any, run: str) -> Protocol:
    """The protocol training run ``run`` of ``study`` trains under: its owners' ``effective_protocol``
    (the frozen one where no deviation value covers them). One run trains once for every arm that
    reads it, so the owners must agree on its recipe section, and no value may change the run's
    ``RUN_SHAPE`` or its size's built-once fields (``size_value_problem``): each is a ConfigError
    naming the arms and the key."""
    owners = run_owners(study.arms, run)
    if not owners:
        return study.protocol
    size = study.arms[owners[0]].size
    first = study.effective_protocol(owners[0])
    key, recipe, frozen = first.recipe_key_for(size), first.recipe_for(size), study.protocol.recipe_for(size)
    where = f"registry/{study.name}/deviations"
    for field in RUN_SHAPE:
        if getattr(recipe, field) != getattr(frozen, field):
            raise ConfigError(f"{where}: a value gives run {run!r} (arms {owners}) {key}.{field} "
                              f"{getattr(recipe, field)!r}, frozen {getattr(frozen, field)!r}: the plan and read "
                              "points keep the frozen run shape (a branch is a continuations.yaml entry, else re-freeze)")
    problem = size_value_problem(study, owners[0])
    if problem:
        raise ConfigError(problem)
    for name in owners[1:]:
        other = study.effective_protocol(name)
        if (other.recipe_for(size), other.sizes[size]) != (recipe, first.sizes[size]):
            raise ConfigError(f"{where}: run {run!r} trains once for arms {owners}, but the deviations' values "
                              f"give {name!r} another {key} or sizes.{size} than {owners[0]!r}; a value that changes "
                              "training must cover every arm of the run")
    return first


def run_recipe_values(study: Any, run: str) -> dict[str, Any]:
    """The deviation values that change how ``run`` trains: those of its recipe section
    (``training.*`` or ``gpu_training.*``) and of its size's ``TRAINING_FIELDS`` (an LLM size's
    checkpoint and training parallelism; not serving keys) from the active entries covering its
    owners, in the order ``effective_protocol`` applies them. The plan puts them beside the run, so
    recording one reruns exactly that run's stages (``run_protocol`` checks first that its owners agree)."""
    study.run_protocol(run)
    owners = run_owners(study.arms, run)
    if not owners:
        return {}
    size = study.arms[owners[0]].size
    keys = {f"sizes.{size}.{field}" for field in getattr(study.protocol.sizes[size], "TRAINING_FIELDS", ())}
    prefix = study.protocol.recipe_key_for(size) + "."
    values: dict[str, Any] = {}
    for entry in study.registry.deviations.active():
        if entry.covers(owners[0]):
            values.update({k: v for k, v in entry.values.items() if k.startswith(prefix) or k in keys})
    return values
