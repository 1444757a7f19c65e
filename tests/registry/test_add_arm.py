"""docs/add-an-arm.md end to end: its command blocks run in a temporary copy of the repository
(the tracked files), as a user types them; and the mistakes it names give one line, exit 2."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.cli.cli_runner import assert_one_line_error, nego

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "add-an-arm.md"
DEVIATION = ("deviation", "new", "demo", "--category", "arm_added", "--title", "w64 at 5x the shared LR",
             "--what", "adds an arm at 5x", "--why", "a learning-rate curve", "--impact", "one more arm")


def doc_commands(path: Path) -> list[list[str]]:
    """The ``nego`` commands of the page's ```bash blocks, continuation lines joined, as argv lists."""
    blocks = re.findall(r"```bash\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)
    lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
    return [shlex.split(line, comments=True)[1:] for line in lines if line.strip().startswith("nego ")]


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch) -> Path:
    """The tracked files of this checkout under ``tmp_path``, the working directory for the test."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True)
    for rel in filter(None, files.stdout.split("\0")):
        if (REPO / rel).is_file():
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, tmp_path / rel)
    monkeypatch.delenv("NEGO_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_how_to_adds_an_arm_the_pipeline_and_the_audit_accept(checkout):
    commands = doc_commands(DOC)
    assert [c[:2] for c in commands] == [["deviation", "new"], ["pipeline", "plan"], ["pipeline", "plan"],
                                         ["audit", "demo"], ["status", "demo"]]
    results = [nego(*argv) for argv in commands]
    for argv, result in zip(commands, results):
        assert result.exit_code == 0, (argv, result.stdout, result.stderr)
    added = yaml.safe_load((checkout / "registry/demo/arms.yaml").read_text())["added_arms"]["w64_lr5x"]
    issued = len(yaml.safe_load((REPO / "registry/demo/deviations/index.yaml").read_text())["entries"])
    new_id = issued + 1  # the committed log's entries, then the how-to's
    assert (added["lr_multiple"], added["run"], added["read_point"], added["deviations"]) == (5, "w64_lr5x", "early", [new_id])
    entry = yaml.safe_load(next((checkout / "registry/demo/deviations").glob(f"{new_id:04d}-*.yaml")).read_text())
    assert entry["category"] == "arm_added" and entry["arms"] == ["w64_lr5x"]
    plan = yaml.safe_load((checkout / "pipelines/plans/demo.yaml").read_text())["plan"]
    assert "w64_lr5x" in plan["arms"] and "w64_lr5x" in plan["runs"]
    audit = json.loads(nego("audit", "demo", "--json").stdout)
    assert any(f["check"] == "arms" and f["status"] == "covered" and f["deviations"] == [new_id] for f in audit["findings"])
    status = json.loads(results[-1].stdout)
    assert {a["arm"]: a["frozen"] for a in status["arms"]}["w64_lr5x"] == "added"


@pytest.mark.parametrize("settings, fragment", [
    (("--set", "read_point=initial"),
     "registry/demo/arms.yaml:added_arms.w64_lr5x.read_point: unknown read point 'initial'; known: ['combined', 'early']"),
    ((), "registry/demo/arms.yaml:added_arms.w64_lr5x.lr_multiple: 5.0 differs from another arm of run 'w64_lr3x'"),
    (("--set", "size=w99", "--set", "run=w64_lr5x"), "registry/demo/arms.yaml:added_arms.w64_lr5x.size: unknown size 'w99'"),
])
def test_a_bad_new_arm_is_one_line_and_writes_nothing(checkout, settings, fragment):
    before = (checkout / "registry/demo/arms.yaml").read_text()
    entries = sorted((p.name, p.read_bytes()) for p in (checkout / "registry/demo/deviations").iterdir())
    result = nego(*DEVIATION, "--add-arm", "w64_lr5x", "--like", "w64_lr3x", "--set", "lr_multiple=5", *settings)
    assert_one_line_error(result, fragment)
    assert (checkout / "registry/demo/arms.yaml").read_text() == before
    assert sorted((p.name, p.read_bytes()) for p in (checkout / "registry/demo/deviations").iterdir()) == entries


def test_an_arm_not_yet_added_is_named_with_the_way_to_add_it(checkout):
    assert_one_line_error(nego(*DEVIATION, "--arm", "w64_lr5x"), "unknown arms ['w64_lr5x']", "--add-arm NAME")
    assert_one_line_error(nego(*DEVIATION, "--add-arm", "w16_lr3x"), "already in the frozen matrix")
    assert_one_line_error(nego(*DEVIATION, "--like", "w16_lr3x"), "--like: only with --add-arm NAME")


def test_a_hand_written_bad_read_point_is_a_file_key_reason_line(checkout, edit):
    edit(checkout / "registry/demo/arms.yaml", "added_arms: {}", "added_arms:\n  w64_lr5x:\n    kind: trained\n"
         "    description: x\n    size: w64\n    lr_multiple: 5\n    run: w64_lr5x\n    read_point: initial\n"
         "    seller: 'policy:{checkpoint}'\n    deviations: [1]")
    line = "registry/demo/arms.yaml:added_arms.w64_lr5x.read_point: unknown read point 'initial'"
    for argv in (("status", "demo"), ("pipeline", "plan", "demo", "--check"), (*DEVIATION, "--arm", "w64_lr3x")):
        assert_one_line_error(nego(*argv), line)
    audit = nego("audit", "demo", "--json")
    assert audit.exit_code == 1 and "KeyError" not in audit.stdout + audit.stderr
    findings = json.loads(audit.stdout)["findings"]
    assert {"check": "lock", "status": "pass"}.items() <= findings[0].items()
    assert any(f["check"] == "protocol" and f["evidence"].startswith(line) for f in findings)


def test_an_arm_with_its_own_estimator_trains_under_the_value_its_entry_records(committed_root, tmp_path):
    """``--value``: the added lm arm's run trains with the bounded estimator, the frozen arms do not."""
    from negotiation.study import load_study
    from negotiation.training.lm import lm_train_config_for

    def add(arm: str, value: str):
        return nego("deviation", "new", "lm", "--category", "arm_added", "--title", f"{arm} with group-mean advantages",
                    "--add-arm", arm, "--like", "lm_m_shared", "--set", f"run={arm}", "--value", value,
                    "--what", "a secondary arm", "--why", "the estimator", "--impact", "one more arm",
                    "--root", str(committed_root))

    result = add("lm_m_bounded", "gpu_training.baseline=group_mean")
    assert result.exit_code == 0, result.stderr
    study = load_study("lm", committed_root)
    (entry,) = [e for e in study.deviations.entries.values() if "lm_m_bounded" in e.arms]
    assert entry.values == {"gpu_training.baseline": "group_mean"}
    added = lm_train_config_for(study, "lm_m_bounded", study.arms["lm_m_bounded"], base=tmp_path)
    frozen = lm_train_config_for(study, "lm_m_shared", study.arms["lm_m_shared"], base=tmp_path)
    assert (added.protocol.gpu_training.baseline, frozen.protocol.gpu_training.baseline) == ("group_mean", "leave_one_out")
    before = sorted(p.name for p in (committed_root / "registry/lm").rglob("*"))
    assert_one_line_error(add("lm_m_bounded2", "gpu_training.basline=group_mean"),
                          "values.gpu_training.basline: no protocol key 'basline' there")
    assert sorted(p.name for p in (committed_root / "registry/lm").rglob("*")) == before
