"""Each DVC stage process imports only the heavy libraries its own work needs.

Every stage is a fresh interpreter, and the demo runs about eighty of them: torch, MLflow,
great-expectations and friends cost seconds each to import. The light stages are run for real
on a scripted reference arm (imports made lazily inside a function count too); the others are
loaded as DVC loads them (``--help`` resolves every name the script imports). Every repository
module a stage process ran must be among the derived code deps of its kind's code stage.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from negotiation.study import default_root

ROOT = default_root()
HEAVY = ("torch", "mlflow", "great_expectations", "numba", "dvc", "litellm", "transformers", "matplotlib")

# Run the script as DVC does, then print which heavy modules the process ended up importing.
PROBE = """
import atexit, json, runpy, sys
heavy = {heavy!r}
atexit.register(lambda: print("IMPORTED " + json.dumps(sorted(h for h in heavy if h in sys.modules)), file=sys.stderr))
atexit.register(lambda: print("RAN " + json.dumps(sorted(m.__file__ for n, m in list(sys.modules.items())
                                                         if n.split(".")[0] == "negotiation")), file=sys.stderr))
sys.argv = {argv!r}
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _imported(script: str, *args: str, cwd: Path = ROOT) -> set[str]:
    argv = [str(ROOT / "pipelines" / script), *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLFLOW_TRACKING_URI": f"sqlite:///{cwd / 'mlflow.db'}"}
    done = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY, argv=argv)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stderr.splitlines() if line.startswith("IMPORTED ")]
    assert lines, done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]
    ran = [line for line in done.stderr.splitlines() if line.startswith("RAN ")]
    _assert_listed(script, {str(Path(f).relative_to(ROOT)) for f in json.loads(ran[-1].removeprefix("RAN "))})
    return set(json.loads(lines[-1].removeprefix("IMPORTED ")))


def _assert_listed(script: str, ran: set[str]) -> None:
    """Every module the stage process ran is a dep of its kind's code stage (a file, or inside a
    listed folder), whose fingerprint each stage of the kind depends on."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    bodies = [body for name, body in stages.items()
              if name.startswith("code_") and f"pipelines/{script}" in body["deps"]]
    deps = set(bodies[0]["deps"]) if bodies else set()
    unlisted = {f for f in ran if not any(f == d or f.startswith(d + "/") for d in deps)}
    assert bodies and not unlisted, f"{script}: ran but not a dep of its code stage: {sorted(unlisted)}"


def test_scripted_arm_stages_import_no_heavy_library(tmp_path):
    out = tmp_path / "outputs" / "demo"
    common = ["--study", "demo"]
    assert _imported("scenarios.py", *common, "--out", str(out / "scenarios"), cwd=tmp_path) == set()
    arm = ["--arm", "ref_boulware", "--results", str(out)]
    assert _imported("select_arm.py", *common, *arm, cwd=tmp_path) == set()
    assert _imported("pilot.py", *common, *arm, "--concurrency", "4", cwd=tmp_path) == set()
    metrics = ["--metrics", str(out / "metrics" / "ref_boulware.json")]
    assert _imported("evaluate.py", *common, *arm, *metrics, "--concurrency", "4", cwd=tmp_path) == set()


@pytest.mark.parametrize(("script", "allowed"), [
    ("init.py", {"torch"}),
    ("train.py", {"torch"}),
    ("track.py", {"mlflow"}),
    ("validate.py", {"great_expectations"}),
    ("analyze.py", {"numba"}),
    ("report.py", {"numba", "matplotlib"}),
    ("audit.py", {"numba"}),
])
def test_study_stages_load_only_their_own_heavy_libraries(script, allowed):
    assert _imported(script, "--help") <= allowed
