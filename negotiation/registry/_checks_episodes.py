"""Audit checks on evaluation outputs: error rows, complete pairing, exploratory marks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from pydantic import ValidationError

from negotiation.errors import format_validation_error
from negotiation.registry._findings import AuditContext, Finding
from negotiation.study import ContrastResult

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["check_contrasts", "check_error_rows", "check_pairing", "expected_keys"]

KEY = ["domain", "seed", "buyer"]
_COLUMNS = ["arm", *KEY, "outcome"]
Key = tuple[str, int, str]


def _fail(check: str, evidence: str) -> Finding:
    return Finding(check=check, status="fail", evidence=evidence)


def expected_keys(ctx: AuditContext, *, extension: bool = False) -> set[Key]:
    """The (domain, seed, buyer) set every arm must cover; ``extension``: the doubling rule's extra keys."""
    protocol = ctx.study.protocol
    if extension:
        domains, seeds = protocol.domains.held_out, protocol.seeds.held_out_extension.seeds()
    else:
        domains, seeds = protocol.domains.evaluated, protocol.seeds.evaluation.seeds()
    return {(d, s, b) for d in domains for s in seeds for b in protocol.buyers.evaluation}


def _episode_tables(ctx: AuditContext, check: str) -> Iterator[tuple[str, pd.DataFrame] | Finding]:
    # Imported here: every stage imports the registry, few read episode tables through it.
    import pandas as pd
    import pyarrow
    import pyarrow.parquet as pq

    for folder in ctx.layout.evaluated():
        path = ctx.layout.episodes(folder.name)
        shown = ctx.show(path)
        if not path.is_file():
            yield _fail(check, f"{shown}:<file>: missing for evaluated arm {folder.name!r}")
            continue
        try:
            missing = [c for c in _COLUMNS if c not in pq.read_schema(path).names]
            if missing:
                yield _fail(check, f"{shown}:{missing[0]}: column missing (needs {', '.join(_COLUMNS)})")
                continue
            frame = pd.read_parquet(path, columns=_COLUMNS)
        except (OSError, pyarrow.ArrowException) as exc:
            yield _fail(check, f"{shown}:<file>: unreadable Parquet ({exc})")
            continue
        yield folder.name, frame


def check_error_rows(ctx: AuditContext) -> Iterator[Finding]:
    limit = ctx.study.protocol.evaluation.max_error_rows
    for item in _episode_tables(ctx, "error_rows"):
        if isinstance(item, Finding):
            yield item
            continue
        arm, frame = item
        errors = int((frame["outcome"] == "error").sum())
        where = ctx.show(ctx.layout.episodes(arm))
        if errors > limit:
            yield _fail("error_rows", f"{where}:outcome: {errors} error rows (allowed {limit}); re-run them")
        else:
            yield Finding(check="error_rows", status="pass", evidence=f"{arm}: {len(frame)} episodes, {errors} error rows")


def _keys(frame: pd.DataFrame) -> list[Key]:
    good = frame[frame["outcome"] != "error"]
    return [(str(d), int(s), str(b)) for d, s, b in zip(good["domain"], good["seed"], good["buyer"])]


def _pairing_findings(ctx: AuditContext, arm: str, frame: pd.DataFrame, has_ext: dict[str, bool]) -> Iterator[Finding]:
    where = ctx.show(ctx.layout.episodes(arm))
    wrong_arm = sorted(set(map(str, frame["arm"])) - {arm})
    if wrong_arm:
        yield _fail("pairing", f"{where}:arm: rows of {wrong_arm} in the table of {arm!r}")
    keys = _keys(frame)
    seen = set(keys)
    base, ext = expected_keys(ctx), expected_keys(ctx, extension=True)
    has_ext[arm] = bool(seen & ext)
    want = base | ext if has_ext[arm] else base
    problems = []
    if len(keys) != len(seen):
        problems.append(f"{len(keys) - len(seen)} duplicated (domain, seed, buyer) keys")
    missing, extra = sorted(want - seen), sorted(seen - want)
    if missing:
        problems.append(f"{len(missing)} of {len(want)} expected keys missing, e.g. {missing[0]}")
    if extra:
        buyers = sorted(ctx.study.protocol.buyers.evaluation)
        problems.append(f"{len(extra)} keys outside the design, e.g. {extra[0]} (buyer must be one of {buyers})")
    if problems:
        yield _fail("pairing", f"{where}:domain,seed,buyer: " + "; ".join(problems))
    else:
        yield Finding(check="pairing", status="pass", evidence=f"{arm}: all {len(want)} paired keys, once each")


def check_pairing(ctx: AuditContext) -> Iterator[Finding]:
    has_ext: dict[str, bool] = {}
    for item in _episode_tables(ctx, "pairing"):
        if isinstance(item, Finding):
            yield item
            continue
        yield from _pairing_findings(ctx, *item, has_ext)
    # The doubling rule applies at once to every frozen arm and both buyers, or not at all.
    frozen = {arm: flag for arm, flag in has_ext.items() if ctx.study.is_frozen(arm)}
    if any(frozen.values()) and not all(frozen.values()):
        lacking = sorted(arm for arm, flag in frozen.items() if not flag)
        yield _fail("pairing", f"{ctx.show(ctx.layout.dir / 'evaluate')}:held_out_extension: the doubled held-out "
                               f"panel is missing for frozen arms {lacking}")


def _load_contrasts(path: Path, shown: str) -> tuple[list[ContrastResult], list[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        return [], [f"{shown}:<file>: unreadable JSON ({exc})"]
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("contrasts"), list):
        return [], [f"{shown}:contrasts: expected {{'version': 1, 'study': ..., 'contrasts': [...]}}"]
    results, problems = [], []
    for i, item in enumerate(data["contrasts"]):
        try:
            results.append(ContrastResult.model_validate(item))
        except ValidationError as exc:
            # Re-root each error's key under contrasts.<i> so the line reads file:key: reason.
            lines = format_validation_error(shown, exc).splitlines()
            problems.extend(line.replace(f"{shown}:", f"{shown}:contrasts.{i}.", 1) for line in lines)
    return results, problems


def check_contrasts(ctx: AuditContext) -> Iterator[Finding]:
    path = ctx.layout.contrasts
    shown = ctx.show(path)
    if not path.exists():
        yield Finding(check="contrasts", status="skipped", evidence=f"no {shown} yet")
        return
    stats = ctx.study.protocol.statistics
    family = {(c.arm, c.reference) for c in stats.primary_family}
    results, problems = _load_contrasts(path, shown)
    found, failures = set(), [_fail("contrasts", line) for line in problems]
    for i, result in enumerate(results):
        spec = result.spec
        pair = tuple(sorted(spec.weights, key=lambda arm: -spec.weights[arm]))
        in_family = (len(pair) == 2 and pair in family and spec.weights[pair[0]] == 1 and spec.weights[pair[1]] == -1
                     and spec.metric == stats.score and spec.domains is None and spec.buyer_split is None
                     and spec.buyers is None)
        found |= {pair} if in_family else set()
        if in_family != spec.primary:
            label = "primary" if spec.primary else stats.non_primary_label
            failures.append(_fail("contrasts", f"{shown}:contrasts.{i}.spec.primary: {spec.name!r} is reported {label} "
                                               f"but {'is' if in_family else 'is not'} in the prespecified primary family"))
        elif not spec.primary and (result.mark == "*" or result.holm_p is not None):
            failures.append(_fail("contrasts", f"{shown}:contrasts.{i}.mark: exploratory {spec.name!r} carries a Holm result"))
    elsewhere = _built_elsewhere(ctx, family - found)
    failures += [_fail("contrasts", f"{shown}:contrasts: primary contrast {arm} - {reference} is missing")
                 for arm, reference in sorted(family - found - elsewhere)]
    yield from failures
    if elsewhere:
        named = ", ".join(f"{arm} - {reference}" for arm, reference in sorted(elsewhere))
        yield Finding(check="contrasts", status="skipped",
                      evidence=f"{named}: not evaluated under {ctx.show(ctx.layout.dir)} "
                               "(the other profile's arms, built in their own results folder: docs/pipeline.md)")
    if not failures:
        yield Finding(check="contrasts", status="pass",
                      evidence=f"{len(results)} contrasts; the {len(family) - len(elsewhere)} primary ones "
                               "Holm-family, the rest exploratory")


def _built_elsewhere(ctx: AuditContext, missing: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Missing primaries between arms of the other profile, none of which was evaluated in this folder.

    A study with a GPU profile (``Study.gpu_profile_arms``) builds it in its own results folder
    (``outputs/<study>-gpu``, its own DVC file): the CPU folder lacks the GPU arms' contrasts and
    the GPU folder the CPU arms'. A folder that holds any of a contrast's arms must carry that
    contrast like any other.
    """
    gpu = ctx.study.gpu_profile_arms() if ctx.study else set()
    if not gpu:
        return set()
    cpu = {n for n, a in ctx.study.arms.items() if n not in gpu and a.kind != "reference"}
    groups = [gpu, cpu] if ctx.study.results_profile(ctx.layout.dir) == "gpu" else [gpu]
    return {pair for pair in missing if any(set(pair) <= group for group in groups)
            and not any(ctx.layout.evaluate(arm).exists() for arm in pair)}
