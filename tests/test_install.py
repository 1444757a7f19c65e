"""Install profiles: a lean core, extras per job, `make repro` installs only the pipeline's
packages (no Chromium, no test tools), everything pinned by the committed lock file."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
NOT_CORE = {"torch", "dvc", "mlflow", "great-expectations", "scipy", "matplotlib", "jinja2", "numba", "litellm", "transformers",
            "pytest", "hypothesis", "playwright", "vllm"}
FAST_MOVING = {"litellm", "transformers", "mlflow", "dvc"}


def _reqs(texts):
    return [Requirement(t) for t in texts]


def _lock() -> dict[str, str]:
    lines = (ROOT / "requirements.lock").read_text().splitlines()
    pins = [line.split("==") for line in lines if line and not line.startswith("#")]
    return {name: version for name, version in pins}


def test_core_is_lean():
    assert not {r.name for r in _reqs(PROJECT["dependencies"])} & NOT_CORE


def test_fast_moving_dependencies_have_upper_bounds():
    every = _reqs(PROJECT["dependencies"]) + [r for texts in PROJECT["optional-dependencies"].values()
                                               for r in _reqs(texts)]
    for req in every:
        if req.name in FAST_MOVING:
            assert any(s.operator in ("<", "<=", "==", "~=") for s in req.specifier), str(req)


@pytest.mark.parametrize("profile", ["pipeline", "fast", "llm", "dev"])
def test_the_lock_pins_every_requirement_of_every_profile_within_its_range(profile):
    lock = _lock()
    for req in _reqs(PROJECT["dependencies"] + PROJECT["optional-dependencies"][profile]):
        if req.name == "negotiation":
            continue
        name = canonicalize_name(req.name)  # the lock's spelling: ruamel.yaml is ruamel-yaml
        assert name in lock, f"{req.name} is not in requirements.lock (run `make lock`)"
        assert req.specifier.contains(lock[name], prereleases=True), f"{name}=={lock[name]} outside {req}"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_repro_installs_the_pipeline_profile_from_the_lock_without_browser_or_test_tools():
    plan = subprocess.run(["make", "-n", "-B", "repro"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "-c requirements.lock -e '.[pipeline,fast,anac]'" in plan and "dvc repro" in plan  # anac: the demo's panel
    assert "system-deps" not in plan and "[dev]" not in plan
    tests = subprocess.run(["make", "-n", "-B", "test"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "system-deps" in tests and "-c requirements.lock -e '.[dev]'" in tests


BLOCKER = """
import sys
BLOCK = {"torch", "dvc", "mlflow", "great_expectations", "scipy", "matplotlib", "jinja2", "numba", "litellm", "transformers",
         "pytest", "hypothesis", "playwright"}
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCK:
            raise ImportError(f"{name} is not part of the core install", name=name)
sys.meta_path.insert(0, Blocker())
from negotiation.cli import main
sys.argv = ["nego", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("args", [["domains"], ["protocol", "verify", "demo"], ["audit", "demo"], ["--version"],
                                  ["scenario", "used_car", "5"], ["score", "used_car", "5", "--ledger", '{"price": 40}'],
                                  ["pipeline", "plan", "demo", "--check"], ["status", "demo"],
                                  ["play", "--seller", "scripted:boulware", "--buyer", "scripted:titfortat",
                                   "--domain", "used_car", "--seed", "5000000"]])
def test_the_core_commands_run_without_any_extra(args):
    done = subprocess.run([sys.executable, "-c", BLOCKER, *args], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_command_needing_an_extra_names_it():
    done = subprocess.run([sys.executable, "-c", BLOCKER, "play", "--seller", "policy:outputs/none", "--buyer",
                           "scripted:titfortat", "--domain", "used_car", "--seed", "5"],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 2
    assert "torch is not installed" in done.stderr and "pip install -e '.[pipeline]'" in done.stderr


CORE_IMPORTS = """
import sys
import negotiation.env, negotiation.protocol, negotiation.registry, negotiation.study, negotiation.cli
from negotiation.agents import make_agent
make_agent("scripted:boulware", "seller")
print(sorted(m for m in ("torch", "dvc", "mlflow", "great_expectations", "numba", "scipy", "matplotlib", "litellm",
                         "transformers") if m in sys.modules))
"""


def test_the_core_packages_never_import_torch_or_an_extra():
    done = subprocess.run([sys.executable, "-c", CORE_IMPORTS], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_the_extra_named_for_each_package_installs_it():
    from negotiation._install import EXTRA_OF

    extras = PROJECT["optional-dependencies"]
    for module, extra in EXTRA_OF.items():
        names = {r.name.lower().replace("-", "_") for r in _reqs(extras[extra])}
        assert module in names, f"{module}: not in the {extra!r} extra of pyproject.toml"
        earlier = [e for e in list(extras)[:list(extras).index(extra)]
                   if module in {r.name.lower().replace("-", "_") for r in _reqs(extras[e])}]
        assert not earlier, f"{module}: {earlier[0]!r} comes first in pyproject.toml"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_repro_lm_adds_the_llm_profile_the_lm_stages_load():
    plan = subprocess.run(["make", "-n", "-B", "repro-lm"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "-c requirements.lock -e '.[pipeline,fast,anac,llm]'" in plan
    assert "dvc --cd pipelines/lm repro" in plan and "[dev]" not in plan
