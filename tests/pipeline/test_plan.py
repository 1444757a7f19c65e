"""The derived plan and per-study pipeline files: complete, current, and checked."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from negotiation.pipeline import build_plan, stale_code_deps, write_plan
from negotiation.pipeline._studyfile import derive_files
from negotiation.errors import ConfigError
from negotiation.study import default_root

ROOT = default_root()


@pytest.fixture()
def root(committed_root: Path) -> Path:
    """protocol/ and registry/ as committed, plus the pipeline files and the code their deps derive from."""
    root = committed_root
    shutil.copytree(ROOT / "pipelines", root / "pipelines", symlinks=True)  # a study project links outputs/
    shutil.copytree(ROOT / "negotiation", root / "negotiation", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(ROOT / "dvc.yaml", root / "dvc.yaml")
    return root


def test_paper_plan_holds_the_frozen_ten_and_the_eleven_added_arms():
    arms = build_plan("paper")["plan"]["arms"]
    assert len(arms) == 21
    assert sum(a["frozen"] for a in arms.values()) == 10
    assert {a["kind"] for a in arms.values()} == {"base", "trained", "reference"}


def test_paper_plan_states_each_read_and_branch_as_the_paper_ran_them():
    plan = build_plan("paper")["plan"]
    reads = {name: (a["run"], a["read_step"], a["combined_step"], a["parent_run"], a["branch_step"])
             for name, a in plan["arms"].items() if a["kind"] == "trained"}
    assert reads["31b_shared_104"] == ("31b_shared_cont", 48, 104, "31b_shared_init", 56)  # App. K
    assert reads["e4b_shared_104"] == ("e4b_shared_cont", 48, 104, "e4b_shared_init", 56)
    assert reads["e2b_shared_104"] == ("e2b_shared_cont", 40, 104, "e2b_shared_init", 64)
    assert reads["12b_shared_104"] == ("12b_shared_cont", 40, 104, "12b_shared_init", 64)
    for arm in ("e2b_lr3x_56", "e2b_lr10x_56", "12b_lr3x_56", "e4b_shared_56", "31b_shared_56", "e4b_lr3x_56",
                "31b_lr3x_56"):
        assert reads[arm][1:] == (56, 56, "", 0), arm
    # Fig. 3: the continuation adds 40 steps at 2.3B and 12B and 48 at 4.5B and 31B.
    runs = plan["runs"]
    assert {r: (runs[r]["branch_step"], runs[r]["steps"]) for r in runs if runs[r]["parent"]} == {
        "e2b_shared_cont": (64, 40), "12b_shared_cont": (64, 40), "e4b_shared_cont": (56, 48),
        "31b_shared_cont": (56, 48)}


def test_a_continuation_entry_for_no_continuation_is_refused(root):
    with (root / "registry/paper/continuations.yaml").open("a") as f:
        f.write("  e2b_lr3x:\n    branch_step: 56\n    reason: not a continuation\n    deviations: [8]\n")
    with pytest.raises(ConfigError, match="continuations.yaml:continuations.e2b_lr3x: 'e2b_lr3x' is not a continuation"):
        build_plan("paper", root)


def test_runs_start_from_their_size_init_or_their_parent_run():
    plan = build_plan("demo")["plan"]
    runs = plan["runs"]
    assert runs["w16_shared_init"]["start"] == "outputs/demo/init/w16"
    assert runs["w16_shared_cont"]["start"] == "outputs/demo/train/w16_shared_init"
    # parents come before their continuations, so DVC order and reading order agree
    names = list(runs)
    assert names.index("w16_shared_init") < names.index("w16_shared_cont")
    assert plan["arms"]["w16_base"]["source"] == "outputs/demo/init/w16"
    assert plan["arms"]["ref_boulware"]["source"] == "pipelines/demo/arms/ref_boulware/params.yaml"  # its own entry
    assert plan["arms"]["w16_lr3x"]["params_key"] == "arms.w16_lr3x"  # DVC tracks this entry alone


def test_an_arm_added_in_the_registry_enters_the_plan_and_the_check_flags_the_stale_file(root):
    added = root / "registry/demo/arms.yaml"
    text = added.read_text().replace("added_arms: {}", (
        "added_arms:\n  w16_shared_40:\n    kind: trained\n    description: intermediate checkpoint\n"
        "    size: w16\n    lr_multiple: 1\n    run: w16_shared_init\n    read_step: 40\n"
        "    seller: \"policy:{checkpoint}\"\n    deviations: [2]\n"))
    added.write_text(text)
    (root / "registry/demo/deviations/0002-intermediate.yaml").write_text(yaml.safe_dump({
        "version": 1, "id": 2, "date": "2026-12-04", "title": "intermediate checkpoint", "category": "arm_added",
        "arms": ["w16_shared_40"], "what_changed": "read step 40 too", "why": "curve", "expected_impact": "none"}))
    assert build_plan("demo", root)["plan"]["arms"]["w16_shared_40"]["frozen"] is False
    arm = root / "pipelines/demo/arms/w16_shared_40"
    stale = {path for path, current in write_plan("demo", root, check=True) if not current}
    assert stale == {root / "pipelines/plans/demo.yaml", arm / "dvc.yaml", arm / "params.yaml"}
    write_plan("demo", root)
    assert all(current for _, current in write_plan("demo", root, check=True))
    params = yaml.safe_load((arm / "params.yaml").read_text())
    assert params["arm"]["read_step"] == 40 and params["plan"]["params_key"] == "added_arms.w16_shared_40"
    select = yaml.safe_load((arm / "dvc.yaml").read_text())["stages"]["select"]
    assert {"pipelines/demo/arms/w16_shared_40/params.yaml": ["arm", "plan"]} in select["params"]
    assert "outputs/demo/train/w16_shared_init" in select["deps"]  # the run w16_shared_init's folder owns
    assert "train" not in yaml.safe_load((arm / "dvc.yaml").read_text())["stages"]


def test_an_arm_folder_no_arm_is_planned_for_is_an_orphan(root):
    orphan = root / "pipelines/demo/arms/w8_gone"
    shutil.copytree(root / "pipelines/demo/arms/w16_base", orphan)
    assert (orphan, False) in write_plan("demo", root, check=True)
    assert "pipelines/demo/arms/w8_gone: orphan arm folder (no planned arm)" in stale_code_deps("demo", root)
    write_plan("demo", root)
    assert not orphan.exists() and all(current for _, current in write_plan("demo", root, check=True))


def test_study_files_hold_the_study_stages_and_arm_files_the_arm_stages_run_from_the_root():
    demo = yaml.safe_load((ROOT / "pipelines/demo/arms/w16_base/dvc.yaml").read_text())["stages"]["evaluate"]
    assert demo["wdir"] == "../../../.." and demo["cmd"].startswith("python pipelines/evaluate.py")
    # Another study is its own DVC project (pipelines/paper/): its stages run in it, cd to the root first.
    files = derive_files("paper", ROOT, build_plan("paper")["plan"])
    study = yaml.safe_load(files[Path("pipelines/paper/dvc.yaml")])
    assert study["vars"] == [{"plan": {"study": "paper", "out": "outputs/paper", "arms_dir": "arms"}},
                             "../../params.yaml"]
    study_level = ["scenarios", "init", "track", "validate", "analyze", "report", "audit"]
    kinds = [*study_level[:2], "train", "select", "pilot", "evaluate", *study_level[2:]]
    assert list(study["stages"]) == [f"code_{kind}" for kind in kinds] + study_level  # code stages first
    assert "wdir" not in study["stages"]["track"] and "foreach" in study["stages"]["init"]
    arm = yaml.safe_load(files[Path("pipelines/paper/arms/e2b_shared_104/dvc.yaml")])
    assert list(arm["stages"]) == ["train", "select", "pilot", "evaluate"]
    assert set(arm["stages"]["train"]["foreach"]) == {"e2b_shared_cont"}  # the run its entry defines
    evaluate = arm["stages"]["evaluate"]
    assert evaluate["wdir"] == "../.."
    assert evaluate["cmd"] == ("cd ../.. && python pipelines/evaluate.py --study paper --arm e2b_shared_104 "
                               "--results outputs/paper --metrics metrics/paper/e2b_shared_104.json")
    assert evaluate["deps"][0] == "outputs/paper/code/evaluate.sha256"  # its kind's code, fingerprinted
    code = study["stages"]["code_evaluate"]
    assert "wdir" not in code and code["cmd"].startswith("cd ../.. && python pipelines/fingerprint.py ")
    assert code["deps"][:2] == ["../../pipelines/fingerprint.py", "../../pipelines/evaluate.py"]
    assert "../../negotiation/_root.py" in code["deps"]
    assert not any(Path(ROOT, d[len("../../"):]).is_dir() for d in code["deps"] if d.startswith("../../negotiation"))
    assert [name for entry in arm["stages"]["select"]["params"] for name in entry] == [
        "../../protocol/paper/protocol.yaml", "arms/e2b_shared_104/params.yaml"]
    assert all((o if isinstance(o, str) else next(iter(o))).startswith(("outputs/", "metrics/")) for o in evaluate["outs"])
    top = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    assert "metrics" in yaml.safe_load((ROOT / "pipelines/demo/arms/w16_base/dvc.yaml").read_text())["stages"]["evaluate"]
    assert "plots" in top and "plots" not in study and "metrics" not in arm["stages"]["evaluate"]


def test_status_json_shows_the_plan_s_read_steps_and_branches():
    from tests.cli.cli_runner import nego_json

    shown = {a["arm"]: a for a in nego_json("status", "paper")["arms"]}
    plan = build_plan("paper")["plan"]["arms"]
    for name, arm in plan.items():
        if arm["kind"] == "trained":
            keys = ("run", "read_step", "combined_step", "parent_run", "branch_step")
            assert {k: shown[name][k] for k in keys} == {k: arm[k] for k in keys}, name
    assert shown["31b_shared_104"]["reads"] == "31b_shared_cont step 48 (combined 104, branched from 31b_shared_init at 56)"


def test_plan_json_is_one_object_naming_each_file_and_each_stale_dep(root, monkeypatch):
    import json

    from tests.cli.cli_runner import nego

    monkeypatch.setenv("NEGO_ROOT", str(root))  # restored after the test (--root sets it)
    current = nego("--root", str(root), "pipeline", "plan", "demo", "--check", "--json")
    assert current.exit_code == 0, current.stderr
    payload = json.loads(current.stdout)
    assert payload["check"] is True and payload["stale"] == [] and payload["problems"] == []
    assert [Path(f["path"]).name for f in payload["files"]][:2] == ["demo.yaml", "dvc.yaml"]
    assert {Path(f["path"]).name for f in payload["files"][2:]} == {"dvc.yaml", "params.yaml"}  # per arm
    dvc = root / "dvc.yaml"
    dvc.write_text(dvc.read_text().replace("    - negotiation/pipeline/_stage.py\n", "", 1))
    stale = nego("--root", str(root), "pipeline", "plan", "demo", "--check", "--json")
    assert stale.exit_code == 1
    payload = json.loads(stale.stdout)
    assert payload["stale"] == [str(dvc)] and any("missing dep negotiation/pipeline/_stage.py" in p
                                                  for p in payload["problems"])
    written = json.loads(nego("--root", str(root), "pipeline", "plan", "demo", "--json").stdout)
    assert written["check"] is False and written["stale"] == [] and all(f["current"] for f in written["files"])
    assert json.loads(nego("--root", str(root), "pipeline", "plan", "demo", "--check", "--json").stdout)["stale"] == []


def test_a_runs_recorded_training_values_sit_beside_it_so_recording_one_reruns_that_run(committed_root):
    """A deviation value of the recipe section or of a size's training fields lands in
    ``runs.<run>.values`` (the train stage's ``runs.${key}`` param) for that run only; serving values
    (the paper's 31B accelerators) do not."""
    from negotiation.study import load_study
    from tests.study.test_run_protocol import _log

    before = build_plan(load_study("lm", committed_root), profile="gpu")["plan"]["runs"]
    _log(committed_root, "lm", ["lm_m_lr3x"], {"gpu_training.baseline": "group_mean"})
    after = build_plan(load_study("lm", committed_root), profile="gpu")["plan"]["runs"]
    assert after["lm_m_lr3x"]["values"] == {"gpu_training.baseline": "group_mean"}
    assert {run: entry for run, entry in after.items() if run != "lm_m_lr3x"} == \
        {run: entry for run, entry in before.items() if run != "lm_m_lr3x"}
    paper = build_plan(load_study("paper", committed_root))["plan"]["runs"]
    assert not any("values" in entry for entry in paper.values())
    _log(committed_root, "paper", ["e2b_shared_104"], {"sizes.e2b.train_micro_batch": 2})  # NeMo-RL reads it
    paper = build_plan(load_study("paper", committed_root))["plan"]["runs"]
    assert {run: entry["values"] for run, entry in paper.items() if "values" in entry} == \
        {"e2b_shared_cont": {"sizes.e2b.train_micro_batch": 2}}
