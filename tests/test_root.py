"""The repository root is found from the working directory (as git and dvc do), with --root and
$NEGO_ROOT overrides, not fixed to the checkout the package was installed from."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from negotiation.cli import app
from negotiation.errors import ConfigError
from negotiation.study import default_root
from negotiation._root import ROOT_ENV, find_root

HERE = Path(__file__).resolve().parents[1]


def other_clone(dest: Path, drop_domain: str = "used_car") -> Path:
    """A second checkout: its protocol/ and registry/, minus one domain so it is recognisable."""
    for part in ("protocol", "registry"):
        shutil.copytree(HERE / part, dest / part)
    (dest / "protocol/domains" / f"{drop_domain}.yaml").unlink()
    return dest


def domain_names(*args: str) -> list[str]:
    result = CliRunner().invoke(app, [*args, "domains", "--json"])
    assert result.exit_code == 0, result.stderr or result.stdout
    return [row["name"] for row in json.loads(result.stdout)]


@pytest.fixture(autouse=True)
def no_override():
    """No $NEGO_ROOT during a test, and none left after it (`nego --root` sets it in this process,
    so it is managed here rather than by monkeypatch, whose undo would restore the CLI's value)."""
    saved = os.environ.pop(ROOT_ENV, None)
    yield
    os.environ.pop(ROOT_ENV, None)
    if saved is not None:
        os.environ[ROOT_ENV] = saved


def test_root_is_found_from_the_working_directory_upwards(tmp_path, monkeypatch):
    clone = other_clone(tmp_path / "clone")
    (clone / "outputs/demo").mkdir(parents=True)
    monkeypatch.chdir(clone / "outputs/demo")
    assert default_root() == clone.resolve()
    assert "used_car" not in domain_names() and len(domain_names()) == 8


def test_package_folders_named_protocol_and_registry_are_not_a_root(monkeypatch):
    monkeypatch.chdir(HERE / "negotiation")
    assert find_root() == HERE


def test_root_option_and_environment_override_the_working_directory(tmp_path, monkeypatch):
    clone = other_clone(tmp_path / "clone")
    monkeypatch.chdir(HERE)
    assert "used_car" not in domain_names("--root", str(clone))
    os.environ[ROOT_ENV] = str(clone)
    assert find_root() == clone.resolve()


def test_a_folder_that_is_no_root_is_refused_by_name(tmp_path):
    os.environ[ROOT_ENV] = str(tmp_path)
    with pytest.raises(ConfigError, match=rf"\${ROOT_ENV}:{tmp_path}: not a repository root"):
        find_root()
    del os.environ[ROOT_ENV]
    result = CliRunner().invoke(app, ["--root", str(tmp_path), "domains"])
    assert result.exit_code == 2 and "not a repository root" in result.stderr


def test_version_option():
    from negotiation import __version__

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"nego {__version__}"


@pytest.mark.slow
def test_a_non_editable_install_works_against_the_checkout_it_runs_in(tmp_path):
    target, source = tmp_path / "site", tmp_path / "source"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=HERE, check=True, capture_output=True).stdout.decode()
    for name in filter(None, files.split("\0")):  # build from a copy: setuptools writes build/ beside it
        if (HERE / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(HERE / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(source)], check=True, capture_output=True)
    clone = other_clone(tmp_path / "clone")
    code = ("import negotiation, json; from negotiation.study import default_root; "
            "from negotiation.env import load_domains; "
            "print(json.dumps([negotiation.__file__, str(default_root()), sorted(load_domains())]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=clone, env={"PYTHONPATH": str(target), "PATH": ""},
                         check=True, capture_output=True, text=True).stdout
    package, root, domains = json.loads(out)
    assert package.startswith(str(target)) and root == str(clone.resolve()) and "used_car" not in domains
    verify = subprocess.run([sys.executable, "-c", "from negotiation.cli import main; main()", "protocol", "verify",
                             "demo"], cwd=clone, env={"PYTHONPATH": str(target), "PATH": ""}, capture_output=True, text=True)
    assert verify.returncode != 0 and "used_car" in verify.stdout + verify.stderr  # it checked this clone's files
