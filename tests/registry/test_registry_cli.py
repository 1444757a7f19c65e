"""``nego audit`` and ``nego deviation new`` through typer's CliRunner, on the ``nego`` app."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from negotiation.cli import EXIT_FAILED, EXIT_INPUT, app
from negotiation.registry import CHECKS, Deviation, run_audit

runner = CliRunner()  # on the nego app: its error boundary makes failures one line

NEW = ["deviation", "new", "demo", "--category", "read_point", "--title", "Read w16 3x at step 48"]
TEXT = ["--what", "read step 48", "--why", "step 56 lost", "--impact", "slightly earlier policy"]


def test_audit_prints_the_compliance_table_and_passes(root):
    result = runner.invoke(app, ["audit", "demo", "--root", str(root)])
    assert result.exit_code == 0, result.output
    assert "Protocol compliance: demo" in result.stdout and "demo: PASS" in result.stdout
    for column in ("check", "status", "evidence", "deviation"):
        assert column in result.stdout


def test_audit_json_and_failure_exit_code(root, edit):
    edit(root / "protocol/demo/arms.yaml", "    lr_multiple: 10", "    lr_multiple: 11")
    result = runner.invoke(app, ["audit", "demo", "--json", "--root", str(root)])
    assert result.exit_code == EXIT_FAILED
    report = json.loads(result.stdout)
    lock = [f for f in report["findings"] if f["check"] == "lock"]
    assert lock[0]["status"] == "fail" and lock[0]["evidence"].startswith("protocol/demo/arms.yaml:arms.w16_lr10x:")


def test_audit_of_a_malformed_registry_file_fails_without_traceback(root):
    (root / "registry/demo/arms.yaml").write_text("arms: [\n")
    result = runner.invoke(app, ["audit", "demo", "--root", str(root)])
    assert result.exit_code == EXIT_FAILED and "Traceback" not in result.output
    assert "registry/demo/arms.yaml:line" in result.stdout.replace("\n", "")


def test_audit_help_names_every_check_it_runs():
    result = runner.invoke(app, ["audit", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert all(f"{check.name}:" in result.stdout for check in CHECKS)
    assert [f.check for f in run_audit("demo").findings if f.check not in {c.name for c in CHECKS}] == []


def test_deviation_new_scaffolds_the_next_valid_entry(root):
    first = runner.invoke(app, [*NEW, "--arm", "w16_lr3x", *TEXT, "--root", str(root)])
    assert first.exit_code == 0, first.output
    path = root / "registry/demo/deviations/0001-read-w16-3x-at-step-48.yaml"
    entry = Deviation.model_validate(yaml.safe_load(path.read_text()))
    assert (entry.id, entry.category, entry.arms, entry.why) == (1, "read_point", ("w16_lr3x",), "step 56 lost")
    second = runner.invoke(app, ["deviation", "new", "demo", "--category", "gate_override", "--title", "Ran anyway",
                                 "--cell", "w16_lr10x:titfortat", "--supersedes", "1", "--root", str(root)],
                           input="ran the cell\nformat is the point\nnone\n")
    assert second.exit_code == 0, second.output
    entry = Deviation.model_validate(yaml.safe_load((root / "registry/demo/deviations/0002-ran-anyway.yaml").read_text()))
    assert entry.cells[0].buyer == "titfortat" and entry.supersedes == 1 and entry.what_changed == "ran the cell"
    assert run_audit("demo", root=root).passed


def test_deviation_new_rejects_bad_input_with_exit_2(root):
    bad_category = runner.invoke(app, ["deviation", "new", "demo", "--category", "whim", "--title", "x y", *TEXT,
                                       "--arm", "w16_lr3x", "--root", str(root)])
    assert bad_category.exit_code == EXIT_INPUT and bad_category.stderr.startswith("error: --category:'whim': not one of")
    unknown_arm = runner.invoke(app, [*NEW, "--arm", "w99", *TEXT, "--root", str(root)])
    assert unknown_arm.exit_code == EXIT_INPUT
    assert unknown_arm.stderr.startswith("error: registry/demo/deviations/0001-read-w16-3x-at-step-48.yaml:arms: unknown arms ['w99']")
    no_scope = runner.invoke(app, [*NEW, *TEXT, "--root", str(root)])
    assert no_scope.exit_code == EXIT_INPUT and "name the arms or cells covered" in no_scope.stderr
    for cell, key in (("w16_base:nobuyer:nodomain", "buyer"), ("w16_base::nodomain", "domain"),
                      ("nosucharm:titfortat", "arms")):
        typo = runner.invoke(app, [*NEW, "--cell", cell, *TEXT, "--root", str(root)])  # the audit rejected it, after
        assert typo.exit_code == EXIT_INPUT and len(typo.stderr.strip().splitlines()) == 1, typo.output
        assert f"0001-read-w16-3x-at-step-48.yaml:{'cells.0.' if key != 'arms' else ''}{key}: unknown" in typo.stderr
    dangling = runner.invoke(app, [*NEW, "--arm", "w16_lr3x", "--supersedes", "5", *TEXT, "--root", str(root)])
    assert dangling.exit_code == EXIT_INPUT and ":supersedes: no valid entry 5" in dangling.stderr
    folder = root / "registry/demo/deviations"
    assert not folder.exists() or not list(folder.glob("*.yaml"))  # nothing written


def test_audit_refuses_an_explicit_results_folder_that_holds_no_results(root, tmp_path):
    """A typo or an empty folder used to audit the declared state alone and print PASS."""
    import os

    empty, fifo = tmp_path / "empty", tmp_path / "fifo"
    empty.mkdir()
    os.mkfifo(fifo)
    for where, reason in ((tmp_path / "typo", "no such folder"), (empty, "holds no results"), (fifo, "not a folder")):
        result = runner.invoke(app, ["audit", "demo", "--root", str(root), "--results", str(where)])
        assert result.exit_code == EXIT_INPUT, result.output
        assert f"--results:{where}: {reason}" in result.output and "PASS" not in result.output


def test_audit_table_prints_evidence_as_written():
    """Rich read ':id:' in 'arms.yaml:id: 2' as an emoji and '[x]' as markup."""
    import io

    from rich.console import Console

    from negotiation.cli._registry_cmds import print_report
    from negotiation.registry import AuditReport, Finding

    evidence = "registry/demo/deviations/0001.yaml:id: 2 [bold]x[/bold] :smile:"
    finding = Finding.model_validate({**run_audit("demo").findings[0].model_dump(), "evidence": evidence})
    report = AuditReport(version=1, study="demo", results_dir="-", declared_only=True, findings=(finding,))
    out = io.StringIO()
    print_report(report, Console(file=out, width=400))
    assert evidence in out.getvalue()
