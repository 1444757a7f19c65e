"""A study's own DVC project (``negotiation.pipeline._project``): paths re-based into it, its files
and links generated and checked, and what a user types to reproduce a file of it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from negotiation.errors import ConfigError
from negotiation.pipeline import write_plan
from negotiation.pipeline._project import (project_files, project_links, project_path, rebase_stage,
                                           repro_command)
from negotiation.study import default_root

ROOT = default_root()
LM = Path("pipelines/lm")


@pytest.mark.parametrize(("path", "expected"), [
    ("outputs/lm/init/lm_xs", "outputs/lm/init/lm_xs"),          # through the project's link
    ("metrics/lm/lm_xs_base.json", "metrics/lm/lm_xs_base.json"),
    ("pipelines/lm/arms/ref_boulware/params.yaml", "arms/ref_boulware/params.yaml"),  # inside it
    ("negotiation/_root.py", "../../negotiation/_root.py"),       # from the root
    ("pipelines/train.py", "../../pipelines/train.py"),
    ("params.yaml", "../../params.yaml"),
])
def test_a_root_relative_path_as_the_project_names_it(path, expected):
    assert project_path(path, LM) == expected


def test_a_stage_moves_into_the_project_and_its_command_back_to_the_root():
    body = {"cmd": "python pipelines/select_arm.py --arm a --results outputs/lm",
            "deps": ["pipelines/select_arm.py", "negotiation/errors.py", "outputs/lm/init/lm_xs"],
            "params": ["training.backend", "evaluate.concurrency",
                       {"protocol/lm/protocol.yaml": ["read_rule"]},
                       {"pipelines/lm/arms/a/params.yaml": ["arm"]}],
            "outs": ["outputs/lm/select/a", {"metrics/lm/a.json": {"cache": False}}],
            "wdir": "../../../.."}
    rebase_stage(body, LM / "arms/a", LM)
    assert body["cmd"] == "cd ../.. && python pipelines/select_arm.py --arm a --results outputs/lm"
    assert body["wdir"] == "../.."
    assert body["deps"] == ["../../pipelines/select_arm.py", "../../negotiation/errors.py", "outputs/lm/init/lm_xs"]
    assert body["params"] == [{"../../params.yaml": ["training.backend", "evaluate.concurrency"]},
                              {"../../protocol/lm/protocol.yaml": ["read_rule"]},
                              {"arms/a/params.yaml": ["arm"]}]
    top = {"cmd": "python pipelines/track.py", "outs": ["outputs/lm/tracking.json"], "wdir": "../.."}
    rebase_stage(top, LM, LM)
    assert "wdir" not in top  # DVC's default: the file's own folder, the project


def test_an_output_the_project_cannot_link_is_refused():
    with pytest.raises(ValueError, match="outside outputs, metrics"):
        rebase_stage({"cmd": "x", "outs": ["data/x.csv"]}, LM, LM)


def test_the_default_study_has_no_project_of_its_own():
    assert project_files("demo", ROOT) == {} and project_links("demo") == {}
    assert repro_command("demo", Path("pipelines/demo/arms/w16_base/dvc.yaml")) == \
        "dvc repro pipelines/demo/arms/w16_base/dvc.yaml"


def test_a_study_project_shares_the_root_cache_and_ignores_what_the_root_ignores():
    files = project_files("lm", ROOT)
    assert set(files) == {LM / ".dvc/config", LM / ".dvc/.gitignore", LM / ".dvcignore"}
    config = files[LM / ".dvc/config"]
    assert "dir = ../../../.dvc/cache" in config
    assert (ROOT / LM / ".dvc" / "../../../.dvc").resolve() == (ROOT / ".dvc").resolve()
    assert (ROOT / ".dvcignore").read_text() in files[LM / ".dvcignore"]
    assert project_links("lm") == {LM / "outputs": "../../outputs", LM / "metrics": "../../metrics"}
    assert repro_command("lm", LM / "dvc.yaml") == "dvc --cd pipelines/lm repro"
    assert repro_command("lm", LM / "gpu/arms/lm_m_base/dvc.yaml") == "dvc --cd pipelines/lm repro gpu/arms/lm_m_base/dvc.yaml"


def test_the_committed_project_files_and_links_are_current():
    for rel, text in project_files("paper", ROOT).items():
        assert (ROOT / rel).read_text(encoding="utf-8") == text, rel
    for rel, target in project_links("paper").items():
        assert os.readlink(ROOT / rel) == target, rel


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for name in ("protocol", "registry", "pipelines", "negotiation"):
        shutil.copytree(ROOT / name, root / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "dvc.lock"))
    for name in ("params.yaml", ".dvcignore"):
        shutil.copy2(ROOT / name, root / name)
    return root


def test_plan_restores_a_missing_link_and_refuses_to_replace_a_file(tmp_path):
    root = _copy(tmp_path)
    link = root / "pipelines/paper/outputs"
    link.unlink()
    assert (link, False) in write_plan("paper", root, check=True)
    write_plan("paper", root)
    assert os.readlink(link) == "../../outputs"
    link.unlink()
    link.write_text("not a link\n")
    with pytest.raises(ConfigError, match="pipelines/paper/outputs: expected a link to ../../outputs"):
        write_plan("paper", root)
    assert link.read_text() == "not a link\n"  # nothing lost
