"""``nego audit`` with results: read points, pilot gate, sampling, error rows, pairing, provenance."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from negotiation.protocol import SamplingSettings
from negotiation.study import (
    PilotCell,
    PilotRecord,
    ResultsLayout,
    SamplingRecord,
    SamplingUse,
    SelectionRecord,
    load_study,
    protocol_hash,
    write_record,
)
from negotiation.registry import run_audit
from negotiation.registry._deviation_index import append_to_index

ARMS = ("w16_base", "w16_lr3x", "w16_lr10x", "w16_shared_cont")
DEV = {"version": 1, "date": "2026-11-30", "what_changed": "x happened", "why": "y broke", "expected_impact": "none"}


def failures(report, check: str) -> list[str]:
    return [f.evidence for f in report.findings if f.status == "fail" and f.check == check]


def deviation(root: Path, entry_id: int, category: str, **scope) -> None:
    folder = root / "registry/demo/deviations"
    folder.mkdir(parents=True, exist_ok=True)
    body = {**DEV, "id": entry_id, "title": f"entry {entry_id}", "category": category, **scope}
    (folder / f"{entry_id:04d}-entry.yaml").write_text(yaml.safe_dump(body))
    append_to_index(folder, entry_id, folder / f"{entry_id:04d}-entry.yaml")  # as `nego deviation new` does


@functools.lru_cache(maxsize=None)
def _root_digest(root: Path) -> str:
    return protocol_hash("demo", root)


def _digest(study) -> str:
    return _root_digest(study.root)


def episodes(study, arm: str) -> pd.DataFrame:
    p = study.protocol
    rows = [(arm, d, s, b, "deal") for d in p.domains.evaluated for s in p.seeds.evaluation.seeds()
            for b in p.buyers.evaluation]
    return pd.DataFrame(rows, columns=["arm", "domain", "seed", "buyer", "outcome"])


def _saved(study, last: int) -> tuple[int, ...]:
    """Checkpoint steps a run saves up to ``last``."""
    every = study.protocol.training.checkpoint_every
    return tuple(range(every, last + 1, every))


def selection(study, arm: str, *, available=None, step=None, parent_step=None, **changes) -> SelectionRecord:
    definition, recipe = study.arms[arm], study.protocol.training
    offset = (recipe.initial_steps if parent_step is None else parent_step) if definition.parent_run else None
    rule = study.read_step(arm) - (offset or 0)
    step = rule if step is None else step
    available = _saved(study, max(rule, recipe.initial_steps)) if available is None else available
    body = dict(version=1, study="demo", arm=arm, run=definition.run, parent_step=offset, rule_step=rule, step=step,
                substitution=step != rule, available_steps=tuple(available), checkpoint=f"runs/{arm}/step_{step}",
                protocol_hash=_digest(study))
    return SelectionRecord(**{**body, **changes})


def pilot(arm: str, digest: str, bad: tuple[int, int] = (0, 0)) -> PilotRecord:
    cells = tuple(PilotCell(buyer=b, episodes=9, turns=54, bad_parses=n, passed=n == 0)
                  for b, n in zip(("boulware_e05", "titfortat"), bad))
    return PilotRecord(version=1, study="demo", arm=arm, passed=all(c.passed for c in cells), cells=cells,
                       protocol_hash=digest)


def sampling(study, arm: str, seller: SamplingSettings | None = None) -> SamplingRecord:
    s = study.protocol.sampling
    buyers = {b: SamplingUse(requested=s.buyer) for b in study.protocol.buyers.evaluation}
    return SamplingRecord(version=1, study="demo", arm=arm, seller=SamplingUse(requested=seller or s.self_served_seller),
                          buyers=buyers, protocol_hash=_digest(study))


@pytest.fixture
def results(root: Path):
    """A complete, compliant results directory for four demo arms; returns (study, layout)."""
    study = load_study("demo", root)
    layout = ResultsLayout(root / "outputs/demo")
    digest = _root_digest(root)
    for arm in ARMS:
        layout.episodes(arm).parent.mkdir(parents=True)
        episodes(study, arm).to_parquet(layout.episodes(arm))
        write_record(sampling(study, arm), layout.sampling(arm))
        write_record(pilot(arm, digest), layout.pilot(arm))
        if study.arms[arm].kind == "trained":
            write_record(selection(study, arm), layout.selection(arm))
    return study, layout


def test_compliant_results_pass_every_check(root, results):
    report = run_audit("demo", root=root)
    assert report.passed and not report.declared_only
    statuses = {f.check: f.status for f in report.findings}
    assert all(statuses[c] == "pass" for c in ("provenance", "read_points", "pilot_gate", "sampling", "error_rows", "pairing"))
    assert statuses["contrasts"] == "skipped"


def test_uncovered_substitution_fails_then_a_deviation_covers_it(root, results):
    study, layout = results
    rule, every = study.read_step("w16_lr3x"), study.protocol.training.checkpoint_every
    earlier = rule - every
    write_record(selection(study, "w16_lr3x", available=_saved(study, earlier), step=earlier), layout.selection("w16_lr3x"))
    (problem,) = failures(run_audit("demo", root=root), "read_points")
    assert problem.startswith(f"outputs/demo/select/w16_lr3x/selection.json:step: {earlier} substitutes for missing step {rule}")
    deviation(root, 1, "checkpoint_substitution", arms=["w16_lr3x"])
    report = run_audit("demo", root=root)
    assert report.passed and [f.deviations for f in report.findings if f.status == "covered"] == [(1,)]


def test_a_chosen_read_point_needs_a_read_point_deviation(root, results):
    study, layout = results
    rule, every = study.read_step("w16_lr3x"), study.protocol.training.checkpoint_every
    write_record(selection(study, "w16_lr3x", step=rule - every), layout.selection("w16_lr3x"))
    deviation(root, 1, "checkpoint_substitution", arms=["w16_lr3x"])  # wrong category for a choice
    (problem,) = failures(run_audit("demo", root=root), "read_points")
    assert problem.startswith(f"outputs/demo/select/w16_lr3x/selection.json:step: {rule - every} chosen although the entry's step {rule} exists")


def test_continuation_branch_and_rule_step_are_checked(root, results):
    study, layout = results
    recipe = study.protocol.training
    branch = recipe.initial_steps - recipe.checkpoint_every
    write_record(selection(study, "w16_shared_cont", parent_step=branch), layout.selection("w16_shared_cont"))
    (problem,) = failures(run_audit("demo", root=root), "read_points")
    assert problem.startswith(f"outputs/demo/select/w16_shared_cont/selection.json:parent_step: continuation branched at {branch}")
    rule, wrong = study.read_step("w16_lr3x"), recipe.initial_steps + recipe.checkpoint_every
    write_record(selection(study, "w16_lr3x", rule_step=wrong, step=wrong, substitution=False,
                           available=_saved(study, wrong)), layout.selection("w16_lr3x"))
    assert f"outputs/demo/select/w16_lr3x/selection.json:rule_step: {wrong}, but the arm's entry reads own step {rule}" in failures(
        run_audit("demo", root=root), "read_points")


def test_a_read_past_the_declared_step_is_never_covered(root, results):
    study, layout = results
    rule, every = study.read_step("w16_lr3x"), study.protocol.training.checkpoint_every
    write_record(selection(study, "w16_lr3x", step=rule + every, substitution=True, available=_saved(study, rule + every)),
                 layout.selection("w16_lr3x"))
    deviation(root, 1, "read_point", arms=["w16_lr3x"])
    (problem,) = failures(run_audit("demo", root=root), "read_points")
    assert problem == f"outputs/demo/select/w16_lr3x/selection.json:step: {rule + every} read past the entry's step {rule} (combined {rule})"


def test_pilot_gate_failure_is_covered_only_by_a_gate_override_of_that_cell(root, results):
    _, layout = results
    write_record(pilot("w16_lr10x", protocol_hash("demo", root), bad=(0, 3)), layout.pilot("w16_lr10x"))
    (problem,) = failures(run_audit("demo", root=root), "pilot_gate")
    assert problem.startswith("outputs/demo/pilot/w16_lr10x.json:cells.1.bad_parses: 3 in 54 turns")
    deviation(root, 1, "gate_override", cells=[{"arm": "w16_lr10x", "buyer": "boulware_e05"}])
    assert failures(run_audit("demo", root=root), "pilot_gate")  # the other buyer's cell is not covered
    deviation(root, 2, "gate_override", cells=[{"arm": "w16_lr10x", "buyer": "titfortat"}])
    assert run_audit("demo", root=root).passed


def test_a_pilot_record_that_misstates_the_gate_fails(root, results):
    _, layout = results
    cells = (PilotCell(buyer="boulware_e05", episodes=4, turns=20, bad_parses=0, passed=True),
             PilotCell(buyer="titfortat", episodes=9, turns=54, bad_parses=0, passed=True))
    write_record(PilotRecord(version=1, study="demo", arm="w16_base", passed=True, cells=cells,
                             protocol_hash=protocol_hash("demo", root)), layout.pilot("w16_base"))
    (problem,) = failures(run_audit("demo", root=root), "pilot_gate")
    assert problem.startswith("outputs/demo/pilot/w16_base.json:cells.0.passed: True, but 0 bad parses over 4 episodes fails")


def test_sampling_that_differs_from_the_protocol(root, results):
    study, layout = results
    write_record(sampling(study, "w16_lr3x", SamplingSettings(temperature=0.7)), layout.sampling("w16_lr3x"))
    (problem,) = failures(run_audit("demo", root=root), "sampling")
    assert problem.startswith("outputs/demo/evaluate/w16_lr3x/sampling.json:seller.requested: temperature=0.7 (protocol 1.0)")
    deviation(root, 1, "sampling_change", arms=["w16_lr3x"])
    assert run_audit("demo", root=root).passed


def test_what_a_provider_accepted_is_audited_not_only_what_was_sent(root, results):
    study, layout = results
    record = sampling(study, "w16_lr3x")
    protocol = study.protocol.sampling
    buyer = sorted(record.buyers)[0]
    # The seller's provider rejected temperature (as one buyer does in App. A); the buyer's ran at its own.
    seller = SamplingUse(requested=protocol.self_served_seller,
                         accepted=protocol.self_served_seller.model_copy(update={"temperature": None}))
    buyers = {**record.buyers, buyer: SamplingUse(requested=protocol.buyer,
                                                  accepted=protocol.buyer.model_copy(update={"temperature": 0.5}))}
    write_record(record.model_copy(update={"seller": seller, "buyers": buyers}), layout.sampling("w16_lr3x"))
    problems = failures(run_audit("demo", root=root), "sampling")
    assert [p.split(";")[0] for p in problems] == [
        "outputs/demo/evaluate/w16_lr3x/sampling.json:seller.accepted: temperature=None (protocol 1.0)",
        f"outputs/demo/evaluate/w16_lr3x/sampling.json:buyers.{buyer}.accepted: temperature=0.5 (protocol None)"]
    deviation(root, 1, "harness_change", all_arms=True)  # a broad harness entry does not name the arm
    assert len(failures(run_audit("demo", root=root), "sampling")) == 2
    deviation(root, 2, "sampling_change", cells=[{"arm": "w16_lr3x", "buyer": buyer}])
    (left,) = failures(run_audit("demo", root=root), "sampling")
    assert left.startswith("outputs/demo/evaluate/w16_lr3x/sampling.json:seller.accepted")
    deviation(root, 3, "harness_change", arms=["w16_lr3x"])
    assert run_audit("demo", root=root).passed


def test_error_rows_and_broken_pairing_fail(root, results):
    study, layout = results
    frame = episodes(study, "w16_lr3x")
    frame.loc[3, "outcome"] = "error"
    frame.to_parquet(layout.episodes("w16_lr3x"))
    report = run_audit("demo", root=root)
    assert failures(report, "error_rows") == [
        "outputs/demo/evaluate/w16_lr3x/episodes.parquet:outcome: 1 error rows (allowed 0); re-run them"]
    assert failures(report, "pairing")[0].startswith(
        "outputs/demo/evaluate/w16_lr3x/episodes.parquet:domain,seed,buyer: 1 of 144 expected keys missing")
    frame = episodes(study, "w16_lr3x")
    frame = pd.concat([frame, frame.iloc[:2]]).replace({"titfortat": "scripted:titfortat"})
    frame.to_parquet(layout.episodes("w16_lr3x"))
    (problem,) = failures(run_audit("demo", root=root), "pairing")
    assert "2 duplicated (domain, seed, buyer) keys" in problem and "keys outside the design" in problem


def test_held_out_doubling_must_reach_every_frozen_arm(root, results):
    study, layout = results
    p = study.protocol
    extra = pd.DataFrame([("w16_base", "used_car", s, b, "deal") for s in p.seeds.held_out_extension.seeds()
                          for b in p.buyers.evaluation], columns=["arm", "domain", "seed", "buyer", "outcome"])
    pd.concat([episodes(study, "w16_base"), extra]).to_parquet(layout.episodes("w16_base"))
    assert failures(run_audit("demo", root=root), "pairing") == [
        "outputs/demo/evaluate:held_out_extension: the doubled held-out panel is missing for frozen arms "
        "['w16_lr10x', 'w16_lr3x', 'w16_shared_cont']"]


def test_unreadable_or_misfiled_results_fail_closed(root, results):
    study, layout = results
    layout.episodes("w16_lr3x").write_bytes(b"not parquet")
    layout.sampling("w16_base").write_text("{")
    write_record(selection(study, "w16_lr3x"), layout.selection("w16_lr10x"))
    report = run_audit("demo", root=root)
    assert failures(report, "error_rows")[0].startswith("outputs/demo/evaluate/w16_lr3x/episodes.parquet:<file>: unreadable")
    assert failures(report, "sampling")[0].startswith("outputs/demo/evaluate/w16_base/sampling.json:line 1 column 2: invalid JSON")
    assert failures(report, "read_points") == [
        "outputs/demo/select/w16_lr10x/selection.json:arm: record of demo/w16_lr3x stored as demo/w16_lr10x"]


def test_records_from_another_protocol_fail_provenance(root, results):
    _, layout = results
    write_record(pilot("w16_base", "ab" * 32), layout.pilot("w16_base"))
    (problem,) = failures(run_audit("demo", root=root), "provenance")
    assert problem.startswith("outputs/demo/pilot/w16_base.json:protocol_hash: abababababab is not the locked protocol's")


def test_an_explicit_results_directory_is_read(root, results, tmp_path):
    _, layout = results
    layout.dir.rename(tmp_path / "elsewhere")
    assert run_audit("demo", root=root).declared_only
    report = run_audit("demo", root=root, results_dir=tmp_path / "elsewhere")
    assert not report.declared_only and report.passed


def _contrast(name: str, weights: dict[str, float], primary: bool, mark: str = "", **spec) -> dict:
    from negotiation.study import ContrastResult, ContrastSpec, Interval

    interval = Interval(mean=0.01, ci=(0.001, 0.02), p=0.01, clusters=8, episodes=144, resamples=10000, level=0.95,
                        mc_error=(0.001, 0.001), rerun=False)
    result = ContrastResult(spec=ContrastSpec(name=name, weights=weights, primary=primary, **spec), interval=interval,
                            holm_p=0.04 if primary else None, holm_rejected=primary or None, mark=mark)
    return result.model_dump(mode="json")


def _write_contrasts(layout: ResultsLayout, contrasts: list[dict]) -> None:
    layout.contrasts.parent.mkdir(parents=True, exist_ok=True)
    layout.contrasts.write_text(json.dumps({"version": 1, "study": "demo", "contrasts": contrasts}))


PRIMARY = [(f"w{w}_shared_cont", f"w{w}_base") for w in (16, 32, 64, 128)]


def test_contrast_tables_mark_everything_outside_the_primary_family_exploratory(root, results):
    _, layout = results
    primary = [_contrast(f"gain_{a}", {a: 1.0, b: -1.0}, True, "*") for a, b in PRIMARY]
    held_out = _contrast("held_out_gain", {"w16_shared_cont": 1.0, "w16_base": -1.0}, False, "e", domains=("used_car",))
    three_x = _contrast("gain_3x", {"w16_lr3x": 1.0, "w16_base": -1.0}, False, "e")
    _write_contrasts(layout, [*primary, held_out, three_x])
    assert {f.status for f in run_audit("demo", root=root).findings if f.check == "contrasts"} == {"pass"}
    three_x_primary = _contrast("gain_3x", {"w16_lr3x": 1.0, "w16_base": -1.0}, True, "*")
    _write_contrasts(layout, [*primary[1:], held_out, three_x_primary])
    assert failures(run_audit("demo", root=root), "contrasts") == [
        "outputs/demo/analyze/contrasts.json:contrasts.4.spec.primary: 'gain_3x' is reported primary but is not "
        "in the prespecified primary family",
        "outputs/demo/analyze/contrasts.json:contrasts: primary contrast w16_shared_cont - w16_base is missing",
    ]
    starred = {**three_x, "mark": "*"}
    _write_contrasts(layout, [*primary, starred, {"spec": {}}])
    problems = failures(run_audit("demo", root=root), "contrasts")
    assert problems[0].startswith("outputs/demo/analyze/contrasts.json:contrasts.5.spec.name: Field required")
    assert problems[-1] == "outputs/demo/analyze/contrasts.json:contrasts.4.mark: exploratory 'gain_3x' carries a Holm result"


def test_gpu_profile_primaries_are_required_only_where_their_arms_were_evaluated(root):
    from negotiation.study import ContrastResult, ContrastSpec, Interval

    layout = ResultsLayout(root / "outputs" / "lm")
    interval = Interval(mean=0.01, ci=(0.001, 0.02), p=0.01, clusters=8, episodes=144, resamples=10000, level=0.95,
                        mc_error=(0.001, 0.001), rerun=False)
    xs = ContrastResult(spec=ContrastSpec(name="xs", weights={"lm_xs_shared": 1.0, "lm_xs_base": -1.0}, primary=True),
                        interval=interval, holm_p=0.04, holm_rejected=True, mark="*").model_dump(mode="json")
    layout.contrasts.parent.mkdir(parents=True)
    layout.contrasts.write_text(json.dumps({"version": 1, "study": "lm", "contrasts": [xs]}))
    findings = [f for f in run_audit("lm", root=root).findings if f.check == "contrasts"]
    assert [f.status for f in findings] == ["skipped", "pass"]
    assert findings[0].evidence.startswith("lm_l_shared_104 - lm_l_base, lm_m_shared_104 - lm_m_base, "
                                           "lm_xl_shared_104 - lm_xl_base: not evaluated under")
    layout.evaluate("lm_m_shared_104").mkdir(parents=True)  # a folder holding a GPU arm must carry its primary
    assert failures(run_audit("lm", root=root), "contrasts") == [
        "outputs/lm/analyze/contrasts.json:contrasts: primary contrast lm_m_shared_104 - lm_m_base is missing"]
