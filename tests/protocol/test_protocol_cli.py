"""``nego protocol freeze|verify`` through typer's CliRunner on the ``nego`` app (its error boundary included)."""

from __future__ import annotations

from typer.testing import CliRunner

from negotiation.cli import EXIT_FAILED, EXIT_INPUT, app

runner = CliRunner()


def _invoke(*args: str):
    return runner.invoke(app, ["protocol", *args])


def test_freeze_then_verify(root):
    frozen = _invoke("freeze", "demo", "--root", str(root))
    assert frozen.exit_code == 0, frozen.output
    assert "froze demo: 11 files, protocol hash " in frozen.stdout
    checked = _invoke("verify", "demo", "--root", str(root))
    assert checked.exit_code == 0 and "11 frozen files match the lock" in checked.stdout


def test_verify_names_file_and_key_of_a_change_and_exits_1(root, edit):
    _invoke("freeze", "demo", "--root", str(root))
    edit(root / "protocol/demo/arms.yaml", "    lr_multiple: 10", "    lr_multiple: 12")
    result = _invoke("verify", "demo", "--root", str(root))
    assert result.exit_code == EXIT_FAILED
    assert result.stderr.startswith("error: protocol/demo/arms.yaml:arms.w16_lr10x: changed since freeze")


def test_malformed_yaml_is_one_line_and_exit_2_without_traceback(root):
    (root / "protocol/demo/arms.yaml").write_text("arms: {w16: [\n", encoding="utf-8")
    result = _invoke("freeze", "demo", "--root", str(root))
    assert result.exit_code == EXIT_INPUT
    assert result.stderr.startswith("error: protocol/demo/arms.yaml:line ") and "invalid YAML" in result.stderr
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)


def test_schema_violation_is_file_key_reason(root, edit):
    edit(root / "protocol/demo/protocol.yaml", "  dirichlet_alpha: 0.3 ", "  dirichlet_alpha: -0.3 ")
    result = _invoke("freeze", "demo", "--root", str(root))
    assert result.exit_code == EXIT_INPUT
    assert result.stderr.startswith("error: protocol/demo/protocol.yaml:environment.dirichlet_alpha: Input should be greater than 0")


def test_help_lists_both_commands():
    result = runner.invoke(app, ["protocol", "--help"])
    assert result.exit_code == 0 and "freeze" in result.stdout and "verify" in result.stdout
