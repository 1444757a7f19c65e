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
KEPT_LM_M_GN = KEPT_GPU.parents[1] / "lm-gpu-lm_m-gn-2026-12-07"
"""lm_m rebuilt with the group-normalized arms of deviations 5-7 (secondary): no primary arm."""


@pytest.mark.parametrize(("kept", "arms", "intervals", "primary"), [
    (KEPT_LM_L, "lm_l_base,lm_l_shared,ref_*", {"lm_l_shared - lm_l_base": [0.008, -0.017, 0.033]}, "lm_l_shared_104"),
    (KEPT_LM_M_GN, "lm_m_base,lm_m_gn*,ref_*", {"lm_m_gn - lm_m_base": [0.005, -0.029, 0.036],
                                                "lm_m_gn_lr3x - lm_m_base": [0.0, -0.027, 0.026],
                                                "lm_m_gn_104 - lm_m_base": [0.019, -0.002, 0.042]}, "lm_m_shared_104"),
], ids=["lm_l", "lm_m_gn"])
def test_a_kept_part_build_gives_its_readmes_numbers_and_the_audit_names_only_the_missing_primary(
        tmp_path, kept, arms, intervals, primary):
    tables = tmp_path / "t"
    shutil.copytree(kept / "tables", tables)
    assert nego_json("validate", "--study", "lm", "--results", str(tables), "--arms", arms)["success"]
    nego_json("analyze", "--study", "lm", "--results", str(tables), "--arms", arms)
    contrasts = json.loads((tables / "analyze" / "contrasts.json").read_text(encoding="utf-8"))["contrasts"]
    found = {c["spec"]["name"]: [round(v, 3) + 0.0 for v in (c["interval"]["mean"], *c["interval"]["ci"])]
             for c in contrasts if c["spec"]["name"] in intervals}
    assert found == intervals  # as the folder's README says
    audit = nego("audit", "lm", "--results", str(tables), "--json")
    failed = [f for f in json.loads(audit.stdout)["findings"] if f["status"] == "fail"]
    assert audit.exit_code == 1 and len(failed) == 1, failed
    assert f"primary contrast {primary} - " in json.dumps(failed[0])


@pytest.mark.parametrize(("kept", "script"), [(KEPT_LM_L, "gain_by_size_step56"), (KEPT_LM_M_GN, "estimator_pairs")])
def test_a_kept_folders_script_prints_what_its_readme_keeps(kept, script):
    done = subprocess.run([sys.executable, str(kept / f"{script}.py")], capture_output=True, text=True,
                          timeout=600, cwd=kept.parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == (kept / f"{script}.txt").read_text(encoding="utf-8")
