"""``--profile`` of the commands that read a results folder: the GPU design where asked or evaluated."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.cli_runner import assert_one_line_error, nego, nego_json


@pytest.mark.parametrize("command", [["audit", "lm"], ["validate", "--study", "lm"], ["analyze", "--study", "lm"],
                                     ["report", "--study", "lm"]])
def test_an_unknown_profile_is_one_line_naming_the_known_ones(command, tmp_path):
    result = nego(*command, "--results", str(tmp_path), "--profile", "tpu")
    assert_one_line_error(result, "--profile:tpu: not a profile; known: ['cpu', 'gpu']")


def test_the_audit_reads_the_declared_gpu_design_when_asked():
    report = nego_json("audit", "lm", "--profile", "gpu")
    assert report["study"] == "lm" and report["declared_only"] and report["results_dir"] == "outputs/lm-gpu"
    assert all(f["status"] != "fail" for f in report["findings"])


def test_status_shows_the_gpu_profiles_arms_and_reads():
    cpu, gpu = nego_json("status", "lm"), nego_json("status", "lm", "--profile", "gpu")
    assert "lm_xs_shared" in {a["arm"] for a in cpu["arms"]} and "lm_m_shared" not in {a["arm"] for a in cpu["arms"]}
    arms = {a["arm"]: a for a in gpu["arms"]}
    assert {"lm_m_base", "lm_xl_shared_104", "ref_boulware"} <= set(arms) and "lm_xs_shared" not in arms
    assert (arms["lm_l_shared_104"]["branch_step"], arms["lm_l_shared_104"]["read_step"]) == (64, 40)
    assert arms["lm_l_lr3x"]["combined_step"] == 56


KEPT_GPU = Path(__file__).resolve().parents[2] / "docs" / "results" / "lm-gpu-2026-12-07" / "tables"
"""A real GPU-profile build of one size (lm_m) and the reference sellers, kept from the GPU machine."""


@pytest.fixture
def part_of_the_gpu_build(tmp_path, monkeypatch):
    """A copy of the kept lm_m build, named by a path relative to the working folder (as users type it)."""
    shutil.copytree(KEPT_GPU / "evaluate", tmp_path / "kept" / "evaluate")
    monkeypatch.chdir(tmp_path)
    return Path("kept")


def test_a_part_built_apart_validates_and_analyzes_by_its_arms(part_of_the_gpu_build):
    whole = nego("validate", "--study", "lm", "--results", str(part_of_the_gpu_build))
    assert whole.exit_code == 1 and "FAIL expect_column_distinct_values_to_equal_set(arm)" in whole.stdout
    report = nego_json("validate", "--study", "lm", "--results", str(part_of_the_gpu_build), "--arms", "lm_m_base, lm_m_shared*, lm_m_lr3x, ref_*")
    assert report["success"] and set(report["tables"]) == {"lm_m_base", "lm_m_shared", "lm_m_shared_104", "lm_m_lr3x",
                                                           "ref_boulware", "ref_conceder"}
    assert Path(report["data_docs"]).is_file()  # great-expectations refused a relative folder before
    nego_json("analyze", "--study", "lm", "--results", str(part_of_the_gpu_build), "--arms", "lm_m_base,lm_m_shared*,lm_m_lr3x,ref_*")
    contrasts = json.loads((part_of_the_gpu_build / "analyze" / "contrasts.json").read_text(encoding="utf-8"))
    (primary,) = [c for c in contrasts["contrasts"] if c["spec"]["primary"]]
    assert primary["spec"]["name"] == "lm_m_shared_104 - lm_m_base"  # the family shrinks to the pair present
    interval = primary["interval"]  # as docs/results/lm-gpu-2026-12-07/README.md reports it
    assert [round(v, 3) for v in (interval["mean"], *interval["ci"])] == [0.011, -0.015, 0.039]
    assert all(c["interval"]["clusters"] == 32 for c in contrasts["contrasts"])  # read in the GPU design


def test_an_arms_pattern_that_names_no_arm_is_one_line(part_of_the_gpu_build):
    result = nego("validate", "--study", "lm", "--results", str(part_of_the_gpu_build), "--arms", "lm_m_*,lm_q*")
    assert_one_line_error(result, "protocol/lm/arms.yaml:arms", "'lm_q*' names no arm of the study")


def test_power_holds_a_gpu_arms_table_to_the_gpu_guards_unless_told():
    table = str(KEPT_GPU / "evaluate" / "lm_m_base" / "episodes.parquet")

    def parse_allowance(*extra):
        report = nego_json("power", table, "--study", "lm", "--seeds", "32", *extra)
        return next(g["allowance"] for g in report["guard_false_trips"] if g["guard"] == "parse_rate")

    assert parse_allowance() == 0.012 and parse_allowance("--profile", "cpu") == 0.005
    assert_one_line_error(nego("power", table, "--study", "lm", "--profile", "tpu"),
                          "--profile:tpu: not a profile; known: ['cpu', 'gpu']")


KEPT_LM_L = KEPT_GPU.parents[1] / "lm-gpu-lm_l-2026-12-07"
"""The second GPU size (lm_l), built in part: base and the step-56 arm evaluated, the primary arm not."""


def test_the_kept_lm_l_build_gives_its_numbers_and_the_audit_names_only_the_missing_primary(tmp_path):
    tables, arms = tmp_path / "t", "lm_l_base,lm_l_shared,ref_*"
    shutil.copytree(KEPT_LM_L / "tables", tables)
    assert nego_json("validate", "--study", "lm", "--results", str(tables), "--arms", arms)["success"]
    nego_json("analyze", "--study", "lm", "--results", str(tables), "--arms", arms)
    contrasts = json.loads((tables / "analyze" / "contrasts.json").read_text(encoding="utf-8"))["contrasts"]
    step56 = next(c["interval"] for c in contrasts if c["spec"]["name"] == "lm_l_shared - lm_l_base")
    assert [round(v, 3) for v in (step56["mean"], *step56["ci"])] == [0.008, -0.017, 0.033]  # as its README says
    audit = nego("audit", "lm", "--results", str(tables), "--json")
    failed = [f for f in json.loads(audit.stdout)["findings"] if f["status"] == "fail"]
    assert audit.exit_code == 1 and len(failed) == 1, failed
    assert "primary contrast lm_l_shared_104 - lm_l_base is missing" in json.dumps(failed[0])


def test_the_lm_l_gain_by_size_script_prints_what_its_readme_keeps():
    done = subprocess.run([sys.executable, str(KEPT_LM_L / "gain_by_size_step56.py")], capture_output=True, text=True,
                          timeout=600, cwd=KEPT_LM_L.parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == (KEPT_LM_L / "gain_by_size_step56.txt").read_text(encoding="utf-8")
