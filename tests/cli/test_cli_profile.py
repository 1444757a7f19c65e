"""``--profile`` of the commands that read a results folder: the GPU design where asked or evaluated."""

from __future__ import annotations

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
