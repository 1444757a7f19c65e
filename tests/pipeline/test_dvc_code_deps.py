"""`dvc status` after a code edit, in a copy of the checkout: every stage whose process imports the
edited module is stale, and a module only one stage imports reruns that stage alone (the derived
code deps, seen through DVC itself).

One stage of each group stands for its group (a group runs one script, so its stages share their
code deps, whichever arm folder holds them). Their outputs are placeholders committed with ``dvc commit``: the lock then
holds the current deps, and ``dvc status`` shows exactly the stages whose deps changed since.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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


def _listing(cwd: Path, path: str) -> set[str]:
    """The stages of ``STAGES`` whose deps in their DVC file name ``path`` or a folder holding it."""
    address = addresses(cwd)

    def deps(name: str) -> list[str]:
        return stage_body(cwd, address[name])["deps"]

    return {name for name in STAGES
            if any(path == dep or path.startswith(dep.rstrip("/") + "/") for dep in deps(name))}


def _edit_function(path: Path, name: str) -> None:
    """Change the body of function ``name`` (a statement that does nothing, so the file's hash moves)."""
    text = path.read_text(encoding="utf-8")
    head = text.index(f"\ndef {name}(")
    body = text.index(":\n", text.index(")", head)) + 2
    path.write_text(text[:body] + "    _edited = True  # noqa: F841\n" + text[body:], encoding="utf-8")


def test_an_edit_reruns_every_stage_that_imports_the_module_and_no_other(tmp_path):
    checkout_copy(tmp_path)
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
    stale = _stale(tmp_path)
    # Every stage whose process imports it reruns. The probe stops after argument parsing, and the
    # packages resolve their names lazily, so it sees fewer importers than a real run has; the
    # stale set is exactly the stages whose derived deps list the module, and no other.
    assert importers and importers <= stale
    assert stale == _listing(tmp_path, "negotiation/env/_utility.py")

    utility.write_text(original, encoding="utf-8")
    assert _stale(tmp_path) == set()
    _edit_function(tmp_path / "negotiation/pipeline/_scenarios.py", "scenario_table")
    importers = {stage for stage, modules in ran.items() if "negotiation.pipeline._scenarios" in modules}
    assert importers == {"scenarios"}
    assert _stale(tmp_path) == importers

