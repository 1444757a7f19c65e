"""`dvc status` after a code edit and a `dvc repro` of the code stages, in a copy of the checkout:
every stage whose process imports the edited module is stale, and a module only one stage imports
reruns that stage alone (the derived code deps and their fingerprints, seen through DVC itself).

One stage of each group stands for its group (a group runs one script, so its stages share their
kind's code stage, whichever arm folder holds them). The code stages run for real (they hash
files); the other outputs are placeholders committed with ``dvc commit``: the lock then holds the
current deps, and ``dvc status`` shows exactly the stages whose deps changed since.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.pipeline.dvc_checkout import addresses, checkout_copy, dvc, stage_body, stage_env

pytestmark = pytest.mark.slow

STAGES = ["scenarios", "init@w16", "train@w16_shared_init", "select@ref_boulware", "pilot@ref_boulware",
          "evaluate@ref_boulware", "track", "validate", "analyze", "report", "audit"]

# The negotiation modules a stage script's process has run once its arguments are parsed (`--help`).
PROBE = """
import json, runpy, sys
sys.argv = [sys.argv[1], "--help"]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit:
    pass
print(json.dumps(sorted(n for n in sys.modules if n.split(".")[0] == "negotiation")))
"""

PLACEHOLDERS = """
from pathlib import Path
from dvc.repo import Repo

for stage in Repo(".").index.stages:
    for path in [Path(str(o.fs_path)) for o in stage.outs] + [Path(str(d.fs_path)) for d in stage.deps]:
        if path.exists():
            continue
        if path.suffix:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("placeholder\\n")
        else:
            path.mkdir(parents=True)
            (path / "placeholder").write_text("placeholder\\n")
"""


def _script(stage: str) -> str:
    return {"select": "select_arm"}.get(stage.split("@")[0], stage.split("@")[0])


def _ran(cwd: Path) -> dict[str, set[str]]:
    out = {}
    for stage in STAGES:
        done = subprocess.run([sys.executable, "-c", PROBE, f"pipelines/{_script(stage)}.py"], cwd=cwd,
                              env=stage_env(cwd), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        out[stage] = set(json.loads(done.stdout.splitlines()[-1]))
    return out


def _stale(cwd: Path) -> set[str]:
    """The names (``STAGES``) of the stages ``dvc status`` lists, by their addresses in the arm files."""
    address = {addr: name for name, addr in addresses(cwd).items() if name in STAGES}
    status = dvc(["status", "--json", *address], cwd)
    assert status.returncode == 0, status.stderr[-3000:]
    return {address[key] for key in json.loads(status.stdout or "{}")}


def _lists(deps: list[str], path: str) -> bool:
    return any(path == dep or path.startswith(dep.rstrip("/") + "/") for dep in deps)


def _listing(cwd: Path, path: str) -> set[str]:
    """The stages of ``STAGES`` whose kind's code stage names ``path`` or a folder holding it."""
    return {name for name in STAGES if _lists(stage_body(cwd, f"code_{name.split('@')[0]}")["deps"], path)}


def _kinds_listing(cwd: Path, path: str) -> set[str]:
    """Every code stage naming ``path`` or a folder holding it."""
    stages = yaml.safe_load((cwd / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    return {name.removeprefix("code_") for name, body in stages.items()
            if name.startswith("code_") and _lists(body["deps"], path)}


def _repro_code(cwd: Path) -> set[str]:
    """``dvc repro`` of the code stages; the kinds whose fingerprint it rewrote."""
    code = [name for name in yaml.safe_load((cwd / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
            if name.startswith("code_")]
    done = dvc(["repro", *code], cwd)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return set(re.findall(r"Running stage 'code_(\w+)'", done.stdout))


def _edit_function(path: Path, name: str) -> None:
    """Change the body of function ``name`` (a statement that does nothing, so the file's hash moves)."""
    text = path.read_text(encoding="utf-8")
    head = text.index(f"\ndef {name}(")
    body = text.index(":\n", text.index(")", head)) + 2
    path.write_text(text[:body] + "    _edited = True  # noqa: F841\n" + text[body:], encoding="utf-8")


def test_an_edit_reruns_every_stage_that_imports_the_module_and_no_other(tmp_path):
    checkout_copy(tmp_path)
    assert _repro_code(tmp_path)  # every kind's fingerprint, for real
    placeholders = subprocess.run([sys.executable, "-c", PLACEHOLDERS], cwd=tmp_path, env=stage_env(tmp_path),
                                  capture_output=True, text=True, timeout=300)
    assert placeholders.returncode == 0, placeholders.stderr[-3000:]
    commit = dvc(["commit", "--force", *(addresses(tmp_path)[name] for name in STAGES)], tmp_path)
    assert commit.returncode == 0, commit.stderr[-3000:]
    assert _stale(tmp_path) == set()
    ran = _ran(tmp_path)

    utility = tmp_path / "negotiation/env/_utility.py"
    original = utility.read_text(encoding="utf-8")
    _edit_function(utility, "score_prefs")
    importers = {stage for stage, modules in ran.items() if "negotiation.env._utility" in modules}
    assert _stale(tmp_path) == set()  # a stage sees the edit through its kind's fingerprint, once rehashed
    assert _repro_code(tmp_path) == _kinds_listing(tmp_path, "negotiation/env/_utility.py")
    stale = _stale(tmp_path)
    # Every stage whose process imports it reruns. The probe stops after argument parsing, and the
    # packages resolve their names lazily, so it sees fewer importers than a real run has; the
    # stale set is exactly the stages whose derived deps list the module, and no other.
    assert importers and importers <= stale
    assert stale == _listing(tmp_path, "negotiation/env/_utility.py")

    utility.write_text(original, encoding="utf-8")
    _repro_code(tmp_path)
    assert _stale(tmp_path) == set()  # the same code, the same fingerprints
    _edit_function(tmp_path / "negotiation/pipeline/_scenarios.py", "scenario_table")
    importers = {stage for stage, modules in ran.items() if "negotiation.pipeline._scenarios" in modules}
    assert importers == {"scenarios"} and _repro_code(tmp_path) == {"scenarios"}
    assert _stale(tmp_path) == importers

