"""``nego audit`` on the declared state: lock, protocol, registry, arms, seeds, sign-offs.

Every check gets a case that makes it fail, and the failing message must name the file and key.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from negotiation.study import freeze
from negotiation.registry import run_audit
from negotiation.registry._deviation_index import INDEX_FILE, append_to_index

DEV = {"version": 1, "date": "2026-11-30", "title": "Read earlier", "category": "read_point",
       "arms": ["w16_lr3x"], "what_changed": "read step 48", "why": "56 lost", "expected_impact": "small"}


def write_deviation(root: Path, name: str, study: str = "demo", **fields) -> Path:
    folder = root / "registry" / study / "deviations"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump({**DEV, **fields}, sort_keys=False))
    reindex(folder)
    return path


def reindex(folder: Path) -> None:
    """Index the folder's entries as `nego deviation new` would have issued them."""
    (folder / INDEX_FILE).unlink(missing_ok=True)
    for entry in sorted(folder.glob("[0-9][0-9][0-9][0-9]-*.yaml")):
        append_to_index(folder, int(entry.name[:4]), entry)


def failures(report, check: str | None = None) -> list[str]:
    return [f.evidence for f in report.findings if f.status == "fail" and check in (None, f.check)]


@pytest.mark.parametrize("study", ["demo", "paper"])
def test_committed_studies_pass_in_their_declared_state(study, tmp_path):
    # An empty results folder: a checkout that already ran `make repro` has outputs/ of its own.
    report = run_audit(study, results_dir=tmp_path / "no-results")
    assert report.passed, failures(report)
    assert report.declared_only and {f.status for f in report.findings if f.check == "pairing"} == {"skipped"}


def test_paper_added_arms_are_covered_by_their_deviations_and_hand_reads_pending(root):
    for path in (root / "registry/paper/signoffs").glob("*.yaml"):
        path.unlink()  # without the paper's recorded sign-offs the guard waits on a reader
    report = run_audit("paper", root=root, results_dir=root / "no-results")
    covered = {f.evidence.split(":")[0]: f.deviations for f in report.findings if f.check == "arms" and f.status == "covered"}
    assert len(covered) == 11 and covered["e2b_lr10x_56"] == (6,) and covered["e4b_lr3x_64"] == (15,)
    (pending,) = [f for f in report.findings if f.check == "hand_read"]
    assert pending.status == "pending" and pending.evidence.startswith("15 trained arms await")


def test_tampered_frozen_byte_fails_the_lock_check(root, edit):
    edit(root / "protocol/demo/protocol.yaml", "  g_len: 0.05", "  g_len: 0.06")
    report = run_audit("demo", root=root)
    (problem,) = failures(report)
    assert problem.startswith("protocol/demo/protocol.yaml:environment.g_len: changed since freeze")


def test_overlapping_seed_blocks_fail(root, edit):
    edit(root / "protocol/demo/protocol.yaml", "evaluation: {start: 5000000, stop: 5000008}",
         "evaluation: {start: 4992, stop: 5000}")
    report = run_audit("demo", root=root)
    assert failures(report, "seed_blocks") == [
        "protocol/demo/protocol.yaml:seeds.evaluation: [4992, 5000) overlaps seeds.training [0, 5000)"]
    assert failures(report, "lock")  # and the frozen file changed, of course


def test_an_invalid_protocol_fails_every_check_that_needs_it(root, edit):
    edit(root / "protocol/demo/arms.yaml", "    kind: reference\n    description: scripted Boulware",
         "    kind: referee\n    description: scripted Boulware")
    report = run_audit("demo", root=root)
    assert failures(report, "protocol")[0].startswith("protocol/demo/arms.yaml:arms.ref_boulware.kind:")
    assert failures(report, "arms")[0].startswith("cannot check: study invalid (protocol/demo/arms.yaml:")


def test_a_bad_deviation_file_fails_with_file_and_key(root):
    write_deviation(root, "0001-read-earlier.yaml", id=1, category="whim")
    (problem,) = failures(run_audit("demo", root=root))
    assert problem.startswith("registry/demo/deviations/0001-read-earlier.yaml:category: Input should be")


def test_malformed_deviation_yaml_fails_without_traceback(root):
    folder = root / "registry/demo/deviations"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "0001-broken.yaml").write_text("id: 1\ntitle: [unclosed\n")
    reindex(folder)
    (problem,) = failures(run_audit("demo", root=root))
    assert problem.startswith("registry/demo/deviations/0001-broken.yaml:line ")


def test_ids_must_run_from_one_without_gaps_and_dates_never_decrease(root):
    write_deviation(root, "0001-a.yaml", id=1, date="2026-11-30")
    write_deviation(root, "0003-c.yaml", id=3)
    assert failures(run_audit("demo", root=root)) == [
        "registry/demo/deviations/0003-c.yaml:id: 3 breaks the sequence (expected 2; ids run 1, 2, 3, ... without gaps)"]
    (root / "registry/demo/deviations/0003-c.yaml").unlink()
    write_deviation(root, "0002-b.yaml", id=2, date="2026-11-01")
    assert failures(run_audit("demo", root=root)) == [
        "registry/demo/deviations/0002-b.yaml:date: 2026-11-01 is before entry 1's 2026-11-30 (the log is append-only)"]


@pytest.mark.parametrize(("supersedes", "expected"), [
    (7, "registry/demo/deviations/0002-b.yaml:supersedes: no entry 7"),
    (3, "registry/demo/deviations/0002-b.yaml:supersedes: 3 is not an earlier entry"),
])
def test_supersession_must_point_back_to_an_existing_entry(root, supersedes, expected):
    write_deviation(root, "0001-a.yaml", id=1)
    write_deviation(root, "0002-b.yaml", id=2, supersedes=supersedes)
    write_deviation(root, "0003-c.yaml", id=3)
    assert failures(run_audit("demo", root=root))[0].startswith(expected)


def test_an_entry_cannot_be_superseded_twice(root):
    write_deviation(root, "0001-a.yaml", id=1)
    write_deviation(root, "0002-b.yaml", id=2, supersedes=1)
    write_deviation(root, "0003-c.yaml", id=3, supersedes=1)
    assert failures(run_audit("demo", root=root)) == [
        "registry/demo/deviations/0003-c.yaml:supersedes: entry 1 is already superseded by entry 2"]


def test_a_deviation_naming_an_unknown_arm_or_buyer_fails(root):
    write_deviation(root, "0001-a.yaml", id=1, arms=["w16_lr3x", "w99"], cells=[{"arm": "w16_lr3x", "buyer": "gpt"}])
    assert failures(run_audit("demo", root=root)) == [
        "registry/demo/deviations/0001-a.yaml:arms.1: 'w99' is not a frozen or added arm",
        "registry/demo/deviations/0001-a.yaml:cells.0.buyer: unknown buyer 'gpt'",
    ]


ADDED = """version: 1
study: demo
added_arms:
  w16_lr5x:
    kind: trained
    description: width-16 policy at 5x the shared LR
    size: w16
    lr_multiple: 5
    run: w16_lr5x
    read_point: early
    seller: "policy:{checkpoint}"
    deviations: [1]
"""


def test_an_added_arm_without_its_deviation_is_outside_the_matrix(root):
    (root / "registry/demo/arms.yaml").write_text(ADDED)
    assert failures(run_audit("demo", root=root)) == [
        "registry/demo/arms.yaml:added_arms.w16_lr5x.deviations: entry 1 does not exist",
        "w16_lr5x: added outside the frozen matrix; no active deviation (arm_added) covers it",
    ]
    write_deviation(root, "0001-add-5x.yaml", id=1, category="arm_added", arms=["w16_lr5x"])
    report = run_audit("demo", root=root)
    assert report.passed and [f.deviations for f in report.findings if f.status == "covered"] == [(1,)]


def test_a_superseded_arm_added_entry_no_longer_covers(root):
    (root / "registry/demo/arms.yaml").write_text(ADDED)
    write_deviation(root, "0001-add-5x.yaml", id=1, category="arm_added", arms=["w16_lr5x"])
    write_deviation(root, "0002-withdraw.yaml", id=2, category="arm_added", arms=["w16_lr3x"], supersedes=1)
    assert failures(run_audit("demo", root=root), "arms")[0] == (
        "registry/demo/arms.yaml:added_arms.w16_lr5x.deviations: entry 1 is superseded")


def test_an_added_arm_must_fit_the_protocol(root, edit):
    (root / "registry/demo/arms.yaml").write_text(ADDED.replace("read_point: early", "read_step: 60"))
    write_deviation(root, "0001-add-5x.yaml", id=1, category="arm_added", arms=["w16_lr5x"])
    assert failures(run_audit("demo", root=root)) == [
        "registry/demo/arms.yaml:added_arms.w16_lr5x.read_step: reads combined step 60, not a checkpoint (every 8) "
        "of a run planned for 64 steps",
        "registry/demo/arms.yaml:added_arms.w16_lr5x.read_step: combined step 60 = own step 60 of run w16_lr5x, not a "
        "read point of the protocol {'early': 56, 'combined': 104}; the entry gives no read_reason"]


def test_an_explicit_read_step_needs_a_reason_and_a_deviation_the_arm_cites(root):
    (root / "registry/demo/arms.yaml").write_text(ADDED.replace("read_point: early", "read_step: 48"))
    write_deviation(root, "0001-add-5x.yaml", id=1, category="arm_added", arms=["w16_lr5x"])
    (problem,) = failures(run_audit("demo", root=root))
    assert problem.endswith("the entry gives no read_reason")
    (root / "registry/demo/arms.yaml").write_text(ADDED.replace(
        "read_point: early", "read_step: 48\n    read_reason: read early to match a lost checkpoint"))
    assert run_audit("demo", root=root).passed  # the arm_added entry it cites covers its read
    covered = [f for f in run_audit("demo", root=root).findings if f.check == "read_steps" and f.status == "covered"]
    assert [(f.deviations, f.evidence.endswith("(read early to match a lost checkpoint)")) for f in covered] == [((1,), True)]


def test_an_evaluated_arm_outside_the_matrix_fails(root):
    (root / "outputs/demo/evaluate/w16_lr5x").mkdir(parents=True)
    report = run_audit("demo", root=root)
    assert failures(report, "arms") == [
        "outputs/demo/evaluate/w16_lr5x:arm: 'w16_lr5x' was evaluated or selected but is neither in the frozen "
        "matrix nor added in registry/demo/arms.yaml"]


def _signoff(root: Path, arm: str, **fields) -> None:
    folder = root / "registry/demo/signoffs"
    folder.mkdir(parents=True, exist_ok=True)
    body = {"version": 1, "arm": arm, "reader": "A. Reader", "date": "2026-11-30", "transcripts_read": 10,
            "domain_families": ["training", "held_out"], "verdict": "pass", **fields}
    (folder / f"{arm}.yaml").write_text(yaml.safe_dump(body))


def test_hand_read_sign_offs(root, edit):
    _signoff(root, "w16_lr3x")
    _signoff(root, "w16_lr10x", verdict="fail")
    _signoff(root, "w32_lr3x", transcripts_read=4)
    report = run_audit("demo", root=root)
    rows = {f.evidence.split(":")[0]: f.status for f in report.findings if f.check == "hand_read"}
    assert rows["w16_lr3x"] == "pass" and rows["registry/demo/signoffs/w16_lr10x.yaml"] == "fail"
    assert failures(report, "hand_read")[1].startswith("registry/demo/signoffs/w32_lr3x.yaml:transcripts_read: 4")
    assert rows["10 trained arms await a hand-read sign-off"] == "pending"
    edit(root / "protocol/demo/protocol.yaml", "blocking: false", "blocking: true")
    freeze("demo", root)
    assert "10 trained arms await" in failures(run_audit("demo", root=root), "hand_read")[-1]


def test_the_log_is_append_only_by_its_index(root):
    """Regression: deleting the newest deviation entry passed the audit (nothing recorded the
    highest id issued); editing an entry in place or adding one by hand passed too."""
    folder = root / "registry/demo/deviations"
    write_deviation(root, "0001-a.yaml", id=1)
    newest = write_deviation(root, "0002-b.yaml", id=2)
    assert failures(run_audit("demo", root=root)) == []
    newest.unlink()
    (gone,) = failures(run_audit("demo", root=root))
    assert gone.startswith("registry/demo/deviations/index.yaml:entries.1: entry 2 (0002-b.yaml) was issued and is gone")
    reindex(folder)
    edited = folder / "0001-a.yaml"
    edited.write_text(edited.read_text().replace("read step 48", "read step 40"))
    (changed,) = failures(run_audit("demo", root=root))
    assert changed.startswith("registry/demo/deviations/0001-a.yaml:<bytes>: changed since it was issued")
    reindex(folder)
    (folder / "0002-by-hand.yaml").write_text(yaml.safe_dump({**DEV, "id": 2}, sort_keys=False))
    (unindexed,) = failures(run_audit("demo", root=root))
    assert unindexed == ("registry/demo/deviations/0002-by-hand.yaml:id: entry 2 is not in "
                         "registry/demo/deviations/index.yaml (add entries with `nego deviation new`)")


def test_new_deviation_appends_to_the_index(root):
    from negotiation.registry._deviation_index import DeviationIndex
    from negotiation.protocol import load_yaml_model
    from negotiation.registry._scaffold import new_deviation

    path = new_deviation("demo", category="read_point", title="Read earlier", what_changed="read step 48",
                         why="step 56 was lost", expected_impact="small", arms=["w16_lr3x"], root=root)
    index = load_yaml_model(DeviationIndex, path.parent / INDEX_FILE)
    assert [(e.id, e.file) for e in index.entries] == [(1, path.name)]
    assert failures(run_audit("demo", root=root), "deviation_ids") == []


def test_a_pull_request_may_append_to_the_index_but_not_drop_or_change_an_entry(root):
    from negotiation.registry._deviation_index import appended_only

    folder = root / "registry/demo/deviations"
    write_deviation(root, "0001-a.yaml", id=1)
    write_deviation(root, "0002-b.yaml", id=2)
    target = (folder / INDEX_FILE).read_text()
    write_deviation(root, "0003-c.yaml", id=3)
    assert appended_only(target, folder, root=root) == []  # appended: fine
    (folder / "0002-b.yaml").unlink()
    (folder / "0003-c.yaml").unlink()
    reindex(folder)  # deleting an entry and rewriting the index hides it from the audit...
    assert failures(run_audit("demo", root=root), "deviation_ids") == []
    (dropped,) = appended_only(target, folder, root=root)  # ...not from the comparison with the target branch
    assert dropped == ("registry/demo/deviations/index.yaml:entries.1: entry 2 (0002-b.yaml) was removed "
                       "from the index")


def test_check_index_against_a_git_revision(root):
    import subprocess

    from negotiation.cli._app import run

    write_deviation(root, "0001-a.yaml", id=1)
    write_deviation(root, "0002-b.yaml", id=2)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    assert run(["deviation", "check-index", "demo", "--against", "HEAD", "--root", str(root)]) == 0
    (root / "registry/demo/deviations/0002-b.yaml").unlink()
    reindex(root / "registry/demo/deviations")
    assert run(["deviation", "check-index", "demo", "--against", "HEAD", "--root", str(root)]) == 1
