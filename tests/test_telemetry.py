"""MLflow's telemetry, great-expectations' analytics and pydantic's plugin scan are off unless the user opts in."""

from __future__ import annotations

import os
import subprocess
import sys

CHECK = ("import negotiation, os; from mlflow.telemetry.utils import is_telemetry_disabled; "
         "print(is_telemetry_disabled(), os.environ['GX_ANALYTICS_ENABLED'])")


def _run(**extra: str) -> str:
    # A user's shell: no CI or test markers (MLflow switches telemetry off by itself under those).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CI", "PYTEST", "GITHUB", "MLFLOW", "GX_"))}
    return subprocess.run([sys.executable, "-c", CHECK], env={**env, **extra}, capture_output=True, text=True,
                          check=True).stdout.split()


def test_telemetry_is_off_by_default():
    assert _run() == ["True", "False"]


def test_the_user_can_opt_in():
    assert _run(MLFLOW_DISABLE_TELEMETRY="false", GX_ANALYTICS_ENABLED="True") == ["False", "True"]


PLUGINS = ("import negotiation, pydantic.plugin._loader as loader, importlib.metadata as m; "
           "calls = []; real = m.entry_points; loader.entry_points = lambda **k: calls.append(k) or real(**k); "
           "list(loader.get_plugins()); print(len(calls))")


def _plugin_scans(**extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    return subprocess.run([sys.executable, "-c", PLUGINS], env={**env, **extra}, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_pydantic_plugins_are_not_looked_for_unless_asked():
    assert _plugin_scans() == "0"
    assert _plugin_scans(PYDANTIC_DISABLE_PLUGINS="") == "1"
