"""Fixtures of the load-once tests: a counter of ``load_study`` calls and stage scripts run in-process."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

import negotiation.study._study as study_module

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def loads(monkeypatch) -> list[tuple[str, ...]]:
    """Every ``load_study`` call from now on, as its arguments.

    The counter wraps ``load_study`` where it is defined and in every module that bound it at
    import; imports inside functions read the package's attribute, which is wrapped too."""
    original = study_module.load_study
    calls: list[tuple[str, ...]] = []

    def counted(*args: Any, **kwargs: Any):
        calls.append(tuple(map(str, args)))
        return original(*args, **kwargs)

    counted.counts_loads = True  # a module imported while an earlier test counted holds that test's wrapper
    for name, module in list(sys.modules.items()):
        if not name.startswith(("negotiation", "tests", "benchmarks", "_stage_")):
            continue  # only our modules bind it (a torch namespace raises on any unknown attribute)
        bound = getattr(module, "load_study", None)
        if bound is original or getattr(bound, "counts_loads", False):
            monkeypatch.setattr(module, "load_study", counted)
    return calls


@pytest.fixture
def stage(monkeypatch) -> Callable[..., None]:
    """``stage(script, *args)``: ``python pipelines/<script>.py ARGS`` in this process (its
    ``main``, so its ``stage_main``)."""
    def run(script: str, *args: str) -> None:
        spec = importlib.util.spec_from_file_location(f"_stage_{script}", REPO / "pipelines" / f"{script}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        monkeypatch.setattr(sys, "argv", [f"{script}.py", *args])
        module.main()

    return run


@pytest.fixture
def stage_env(tmp_path, monkeypatch) -> Path:
    """A private MLflow store and eight episodes in flight; the results folder to write."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    monkeypatch.setenv("NEGO_EVAL_CONCURRENCY", "8")
    return tmp_path / "results"
