"""Run-time knobs: read when a stage runs (environment, then params.yaml), never DVC stage params."""

from __future__ import annotations

import re

import pytest
import yaml

from negotiation.errors import ConfigError
from negotiation.pipeline import RUNTIME_KNOBS, runtime_knob
from negotiation.pipeline._template import template_graph
from negotiation.study import default_root

ROOT = default_root()


def _stage_bodies(graph: dict) -> dict[str, dict]:
    return {name: (stage["do"] if "foreach" in stage else stage) for name, stage in graph["stages"].items()}


def _param_keys(body: dict) -> set[str]:
    keys: set[str] = set()
    for entry in body.get("params", []) or []:
        if isinstance(entry, str):
            keys.add(entry)
        else:  # {file: [keys]}: only params.yaml holds run-time knobs
            keys.update(k for f, ks in entry.items() if f.endswith("params.yaml") for k in ks)
    return keys


@pytest.mark.parametrize("study", ["demo", "paper"])
def test_no_stage_depends_on_a_runtime_knob(study):
    graph, code_stages = template_graph(study, ROOT)
    for name, body in [*_stage_bodies(graph).items(), *code_stages.items()]:
        for knob in RUNTIME_KNOBS:
            assert knob not in _param_keys(body), f"{name} has run-time knob {knob} as a param"
            assert not re.search(r"\$\{" + re.escape(knob) + r"\}", body["cmd"]), f"{name} passes {knob} in cmd"


def test_every_runtime_knob_is_in_params_yaml():
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for knob in RUNTIME_KNOBS:
        node = params
        for part in knob.split("."):
            node = node[part]
        assert node not in (None, "")


def test_knob_reads_environment_then_params_then_default(tmp_path, monkeypatch):
    params = tmp_path / "params.yaml"
    monkeypatch.delenv("NEGO_EVAL_CONCURRENCY", raising=False)
    assert runtime_knob("evaluate.concurrency", 16, params) == 16
    params.write_text("evaluate:\n  concurrency: 32\n")
    assert runtime_knob("evaluate.concurrency", 16, params) == 32
    monkeypatch.setenv("NEGO_EVAL_CONCURRENCY", "4")
    assert runtime_knob("evaluate.concurrency", 16, params) == 4


@pytest.mark.parametrize("value", ["many", "0", "-3"])
def test_bad_knob_names_file_key_and_value(tmp_path, monkeypatch, value):
    monkeypatch.delenv("NEGO_EVAL_CONCURRENCY", raising=False)
    params = tmp_path / "params.yaml"
    params.write_text(f"evaluate:\n  concurrency: '{value}'\n")
    with pytest.raises(ConfigError, match=rf"params.yaml:evaluate.concurrency: .*{re.escape(value)}"):
        runtime_knob("evaluate.concurrency", 16, params)


def test_rollout_processes_auto_counts_usable_cpus_and_accepts_a_number(tmp_path, monkeypatch):
    from negotiation.pipeline._train import AUTO_ROLLOUT_PROCESSES, rollout_processes

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NEGO_TRAIN_ROLLOUT_PROCESSES", raising=False)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(16)))
    assert rollout_processes() == AUTO_ROLLOUT_PROCESSES  # no params.yaml: auto, capped
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0})
    assert rollout_processes() == 1
    (tmp_path / "params.yaml").write_text("training:\n  rollout_processes: 3\n")
    assert rollout_processes() == 3
    monkeypatch.setenv("NEGO_TRAIN_ROLLOUT_PROCESSES", "2")
    assert rollout_processes() == 2


@pytest.mark.parametrize(("where", "value"), [("env", "two"), ("env", "0"), ("params", "-1"), ("params", "0")])
def test_bad_rollout_processes_names_its_source_and_value(tmp_path, monkeypatch, where, value):
    from negotiation.pipeline._train import rollout_processes

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NEGO_TRAIN_ROLLOUT_PROCESSES", raising=False)
    if where == "env":
        monkeypatch.setenv("NEGO_TRAIN_ROLLOUT_PROCESSES", value)
        source = r"\$NEGO_TRAIN_ROLLOUT_PROCESSES"
    else:
        (tmp_path / "params.yaml").write_text(f"training:\n  rollout_processes: {value}\n")
        source = r"params.yaml:training.rollout_processes"
    with pytest.raises(ConfigError, match=rf"{source}: expected a positive integer or auto, got '{value}'"):
        rollout_processes()


def test_micro_batch_tokens_auto_is_per_device_and_accepts_a_number(tmp_path, monkeypatch):
    from negotiation.pipeline._train import AUTO_MICRO_BATCH_TOKENS, micro_batch_tokens

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NEGO_TRAIN_MICRO_BATCH_TOKENS", raising=False)
    assert micro_batch_tokens("cpu") == AUTO_MICRO_BATCH_TOKENS["cpu"]  # no params.yaml: auto
    (tmp_path / "params.yaml").write_text("training:\n  micro_batch_tokens: auto\n")
    assert micro_batch_tokens("cuda") == AUTO_MICRO_BATCH_TOKENS["cuda"] > AUTO_MICRO_BATCH_TOKENS["cpu"]
    monkeypatch.setenv("NEGO_TRAIN_MICRO_BATCH_TOKENS", "4096")
    assert micro_batch_tokens("cuda") == 4096
    monkeypatch.setenv("NEGO_TRAIN_MICRO_BATCH_TOKENS", "lots")
    with pytest.raises(ConfigError, match=r"\$NEGO_TRAIN_MICRO_BATCH_TOKENS: expected a positive integer or auto, got 'lots'"):
        micro_batch_tokens("cpu")


@pytest.mark.parametrize(("text", "expected"), [("auto", None), ("on", True), ("off", False), ("'on'", True),
                                               ("true", True), ("'OFF'", False)])
def test_gradient_checkpointing_switch_reads_auto_on_off(tmp_path, monkeypatch, text, expected):
    """Unquoted on/off are YAML booleans; quoted they are strings: both mean the same."""
    from negotiation.pipeline._stage import runtime_switch

    monkeypatch.delenv("NEGO_TRAIN_GRADIENT_CHECKPOINTING", raising=False)
    params = tmp_path / "params.yaml"
    params.write_text(f"training:\n  gradient_checkpointing: {text}\n")
    assert runtime_switch("training.gradient_checkpointing", params) is expected


def test_a_bad_gradient_checkpointing_switch_names_its_source_and_value(tmp_path, monkeypatch):
    from negotiation.pipeline._stage import runtime_switch

    monkeypatch.setenv("NEGO_TRAIN_GRADIENT_CHECKPOINTING", "sometimes")
    with pytest.raises(ConfigError, match=r"\$NEGO_TRAIN_GRADIENT_CHECKPOINTING: expected auto, on or off, got 'sometimes'"):
        runtime_switch("training.gradient_checkpointing", tmp_path / "params.yaml")


@pytest.mark.parametrize("script, args, fragment", [
    ("pilot.py", ["--arm", "../x", "--results", "R"], "--arm:name: '../x' is not a safe name"),
    ("select_arm.py", ["--arm", "nope", "--results", "R"], "--arm:nope: not an arm of study 'demo'"),
    ("evaluate.py", ["--arm", "nope", "--results", "R", "--metrics", "R/m.json"], "--arm:nope: not an arm"),
    ("train.py", ["--run", "nope", "--out", "R", "--curves", "R/c.csv"], "--run:nope: not a run"),
    ("init.py", ["--size", "w16x", "--out", "R"], "--size:w16x: not a size"),
])
def test_a_stage_script_run_by_hand_refuses_a_bad_name_in_one_line(script, args, fragment, tmp_path):
    import subprocess
    import sys

    argv = [a.replace("R", str(tmp_path)) if a.startswith("R") else a for a in args]
    out = subprocess.run([sys.executable, f"pipelines/{script}", "--study", "demo", *argv], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 2 and fragment in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert not any(tmp_path.iterdir())


BLOCK_LLM = """
import sys
class Blocked:  # the llm extra not installed, as after `make repro` (pipeline profile only)
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("transformers", "tokenizers", "accelerate"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Blocked())
"""


def test_an_lm_stage_without_the_llm_extra_stops_with_one_line_naming_it(tmp_path):
    import os
    import subprocess
    import sys

    (tmp_path / "block").mkdir()
    (tmp_path / "block" / "sitecustomize.py").write_text(BLOCK_LLM)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'block'}{os.pathsep}{ROOT}"}
    out = subprocess.run([sys.executable, "pipelines/tokenizer.py", "--study", "lm", "--out", str(tmp_path / "tok")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip().splitlines()[-1] == ("error: tokenizers is not installed (the core install leaves it "
                                                   "out): pip install -e '.[llm]' (docs/install.md)")


@pytest.mark.parametrize("script, args", [
    ("scenarios.py", ["--out", "R"]), ("validate.py", ["--results", "R"]), ("tokenizer.py", ["--out", "R"]),
    ("report.py", ["--results", "R", "--out", "R/o", "--seed", "1", "--viewer-episodes", "3"]),
])
def test_a_stage_script_refuses_an_unknown_study_in_one_line(script, args, tmp_path):
    """Scripts without an arm, run or size checked no study: an unknown one ended with exit 1."""
    import subprocess
    import sys

    argv = [a.replace("R", str(tmp_path)) if a.startswith("R") else a for a in args]
    out = subprocess.run([sys.executable, f"pipelines/{script}", "--study", "nope", *argv], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.startswith("error: protocol/nope:<study>: no study 'nope'"), out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not any(tmp_path.iterdir())
