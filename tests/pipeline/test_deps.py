"""Derived stage code deps: the import closure of each stage script, and the check that flags a
committed pipeline file whose code deps no longer match the code."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from negotiation.cli import app
from negotiation.pipeline import stale_code_deps, write_plan
from negotiation.pipeline._deps import ImportClosure, compress
from negotiation.study import default_root

ROOT = default_root()
IGNORE = shutil.ignore_patterns("*.pyc", "__pycache__")


@pytest.fixture()
def repo(committed_root: Path) -> Path:
    """protocol/ and registry/ as committed plus the code and the pipeline files."""
    root = committed_root
    for part in ("negotiation", "pipelines"):
        shutil.copytree(ROOT / part, root / part, ignore=IGNORE, symlinks=True)  # a study project links outputs/
    shutil.copyfile(ROOT / "dvc.yaml", root / "dvc.yaml")
    return root


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


@pytest.mark.parametrize("study", ["demo", "paper", "lm"])
def test_committed_pipeline_files_are_current(study):
    """The check CI needs: every study's plan and pipeline file (code deps included) as derived."""
    assert all(current for _, current in write_plan(study, check=True)), \
        f"run `nego pipeline plan {study}`: " + "; ".join(stale_code_deps(study))


def test_closure_follows_lazy_exports_used_functions_and_module_strings(tmp_path):
    _write(tmp_path, "negotiation/__init__.py", "")
    _write(tmp_path, "negotiation/pkg/__init__.py",
           "import importlib\n_EXPORTS = {'used': '_a', 'other': '_b'}\n\n"
           "def __getattr__(name):\n    return getattr(importlib.import_module('negotiation.pkg.' + _EXPORTS[name]), name)\n")
    _write(tmp_path, "negotiation/pkg/_a.py",
           "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from negotiation import typing_only\n\n"
           "def used():\n    from negotiation.lazy import thing\n    return thing()\n\n"
           "def unused():\n    from negotiation import never\n    return never\n\n"
           "TABLE = {'kind': 'negotiation.plugin:make'}\n")
    _write(tmp_path, "negotiation/pkg/_b.py", "def other():\n    pass\n")
    for name in ("lazy", "never", "typing_only", "plugin"):
        _write(tmp_path, f"negotiation/{name}.py", "def thing():\n    pass\n\ndef make():\n    pass\n")
    _write(tmp_path, "pipelines/stage.py", "from negotiation.pkg import used\n\nif __name__ == '__main__':\n    used()\n")
    files = ImportClosure(tmp_path).files(tmp_path / "pipelines/stage.py")
    assert sorted(str(p.relative_to(tmp_path)) for p in files) == [
        "negotiation/__init__.py", "negotiation/lazy.py", "negotiation/pkg/__init__.py", "negotiation/pkg/_a.py",
        "negotiation/plugin.py", "pipelines/stage.py"]
    assert compress(files, tmp_path) == ["negotiation/__init__.py", "negotiation/lazy.py", "negotiation/pkg/__init__.py",
                                         "negotiation/pkg/_a.py", "negotiation/plugin.py", "pipelines/stage.py"]
    _write(tmp_path, "negotiation/built/__init__.py", "")
    _write(tmp_path, "negotiation/built/_one.py", "")
    _write(tmp_path, "negotiation/built/_two.py", "")
    _write(tmp_path, "negotiation/lazy.py", "import importlib\n\ndef thing(name='_one'):\n"
           "    return importlib.import_module(f'negotiation.built.{name}')\n")
    assert {"negotiation/built/_one.py", "negotiation/built/_two.py"} <= {
        str(p.relative_to(tmp_path)) for p in ImportClosure(tmp_path).files(tmp_path / "pipelines/stage.py")}
    _write(tmp_path, "pipelines/both.py", "from negotiation.pkg import used, other\n\nused()\nother()\n")
    assert "negotiation/pkg" in compress(ImportClosure(tmp_path).files(tmp_path / "pipelines/both.py"), tmp_path)


def test_a_subpackage_is_listed_whole_from_its_share_of_run_files_and_the_top_package_never(tmp_path):
    """Four of five files run: the folder (fewer dvc.lock entries); three of five: the files."""
    names = ["negotiation/__init__.py", "negotiation/top.py"] + [
        f"negotiation/pkg/{name}.py" for name in ("__init__", "_a", "_b", "_c", "_d")]
    for name in names:
        _write(tmp_path, name, "")
    files = {tmp_path / name for name in names}
    assert compress(files - {tmp_path / "negotiation/pkg/_d.py"}, tmp_path) == [
        "negotiation/__init__.py", "negotiation/pkg", "negotiation/top.py"]
    fewer = files - {tmp_path / "negotiation/pkg/_c.py", tmp_path / "negotiation/pkg/_d.py"}
    assert "negotiation/pkg/_a.py" in compress(fewer, tmp_path)
    assert compress(files, tmp_path) == ["negotiation/__init__.py", "negotiation/pkg", "negotiation/top.py"]
    assert compress(fewer, tmp_path, share=0.6) == ["negotiation/__init__.py", "negotiation/pkg", "negotiation/top.py"]


def test_check_names_the_stage_and_the_missing_and_extra_dep(repo):
    top = repo / "dvc.yaml"
    deps = yaml.safe_load(top.read_text())["stages"]["code_analyze"]["deps"]
    assert "negotiation/env/_utility.py" in deps  # the utility function, which the hand-written list once lacked
    text = top.read_text()
    analyze = text.index("\n  code_analyze:")
    top.write_text(text[:analyze] + text[analyze:].replace("    - negotiation/env/_utility.py\n",
                                                           "    - negotiation/training\n", 1))
    assert stale_code_deps("demo", repo) == ["dvc.yaml: stage code_analyze: missing dep negotiation/env/_utility.py",
                                             "dvc.yaml: stage code_analyze: extra dep negotiation/training"]
    result = CliRunner().invoke(app, ["pipeline", "plan", "demo", "--check", "--root", str(repo)])
    assert result.exit_code == 1
    assert "dvc.yaml: STALE" in result.output and "stage code_analyze: missing dep negotiation/env" in result.output
    write_plan("demo", repo)
    assert stale_code_deps("demo", repo) == [] and top.read_text() == (ROOT / "dvc.yaml").read_text()


def test_a_new_import_makes_exactly_the_importing_kind_s_code_stage_stale(repo):
    """Only scenarios runs negotiation/pipeline/_scenarios.py; an import added there is its alone."""
    module = repo / "negotiation/pipeline/_scenarios.py"
    module.write_text(module.read_text() + "\n\ndef _late():\n    from negotiation.training import _grpo\n    return _grpo\n\n\n"
                      "_LATE = _late\n")
    problems = stale_code_deps("demo", repo)
    # missing deps, and extra ones where the new closure folds a package's files into its folder
    assert problems and all(p.startswith("dvc.yaml: stage code_scenarios: ") for p in problems)
    assert "dvc.yaml: stage code_scenarios: missing dep negotiation/training/_grpo.py" in problems
    assert stale_code_deps("paper", repo)  # a derived study's file is checked the same way


@pytest.mark.parametrize(("study_file", "out"), [("dvc.yaml", "outputs/demo"),
                                                 ("pipelines/paper/dvc.yaml", "outputs/paper")])
def test_each_stage_s_one_code_dep_is_its_kind_s_fingerprint_of_exactly_the_code_listed(study_file, out):
    """A stage lists no code itself; the code stage of its kind lists the fingerprint script and
    the code, and its command hashes exactly that code, from the root (``cd ../..`` in a project)."""
    from negotiation.pipeline import stage_commands
    from negotiation.pipeline._codedeps import is_code_dep

    stages = yaml.safe_load((ROOT / study_file).read_text())["stages"]
    code = {name.removeprefix("code_"): body for name, body in stages.items() if name.startswith("code_")}
    for command in stage_commands(ROOT / study_file):
        if command.name.startswith("code_"):
            continue
        path, _, name = command.address.rpartition(":")
        stage = yaml.safe_load(Path(path).read_text())["stages"][name.split("@")[0]]
        deps = stage.get("do", stage)["deps"]
        kind = command.name.split("@")[0]
        assert deps[0] == f"{out}/code/{kind}.sha256" and not any(map(is_code_dep, deps)), command.address
        assert f"pipelines/{'select_arm' if kind == 'select' else kind}.py" in code[kind]["cmd"]
    for kind, body in code.items():
        listed = [d.removeprefix("../../") for d in body["deps"]]
        hashed = body["cmd"].split(f"--out {out}/code/{kind}.sha256 ", 1)[1].split()
        assert listed == ["pipelines/fingerprint.py", *hashed] and all(map(is_code_dep, listed)), kind


def test_an_arm_file_listing_code_again_is_named(repo):
    arm_file = repo / "pipelines/demo/arms/ref_boulware/dvc.yaml"
    text = arm_file.read_text()
    fingerprint = "    - outputs/demo/code/pilot.sha256\n"
    arm_file.write_text(text.replace(fingerprint, fingerprint + "    - negotiation/pipeline/_evaluate.py\n", 1))
    assert stale_code_deps("demo", repo) == [
        "pipelines/demo/arms/ref_boulware/dvc.yaml: stage pilot: extra dep negotiation/pipeline/_evaluate.py"]


def test_no_dvc_lock_is_committed():
    """docs/pipeline.md: the lock is generated by `dvc repro`, never committed (a committed one goes
    stale with the next code commit and shows as a diff of thousands of lines after every build)."""
    repo = Path(__file__).resolve().parents[2]
    tracked = subprocess.run(["git", "ls-files", "--", "dvc.lock", "*/dvc.lock"], cwd=repo, capture_output=True,
                             text=True, check=True).stdout.split()
    assert tracked == [], f"committed lock files: {tracked} (git rm --cached them)"
