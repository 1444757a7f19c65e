"""The launcher stops with one message naming every missing piece when NeMo-RL cannot run here."""

from __future__ import annotations

import importlib.util

import pytest

from negotiation.errors import ConfigError, NegotiationError
from negotiation.study import load_study
from negotiation.training.nemo import (
    BackendUnavailableError, RunPaths, backend_problems, environment_actor_class, env_settings, grpo_config,
    launch_training, plan_run, read_train_config, write_train_config,
)

NO_NEMO = importlib.util.find_spec("nemo_rl") is None
NO_RAY = importlib.util.find_spec("ray") is None
PAPER = load_study("paper")


def write_config(tmp_path, name: str, negotiation: dict | None = None, **policy) -> str:
    negotiation = negotiation or {}
    plan = plan_run(PAPER, name)
    parent = RunPaths.for_run(tmp_path, plan.parent_run) if plan.parent_run else None
    cfg = grpo_config(PAPER, plan, settings=env_settings("paper"), paths=RunPaths.for_run(tmp_path, plan.run),
                      tracking_uri="sqlite:////x.db", parent_paths=parent)
    cfg["policy"].update(policy)
    cfg["negotiation"]["prompt_builder"] = "tests.training.nemo.test_nemo_dataset:opening_prompt"
    cfg["negotiation"].update(negotiation)
    return write_train_config(cfg, tmp_path / f"{name}.yaml")


def test_missing_pieces_are_listed_together():
    problems = backend_problems(model="/no/such/model", gpus_needed=4, gpu_count=lambda: 1,
                                extra_paths={"parent weights": "/no/such/weights"})
    text = "\n".join(problems)
    assert "GPUs: 4 needed (cluster.gpus_per_node x cluster.num_nodes), 1 visible" in text
    assert "model checkpoint path '/no/such/model' (policy.model_name) does not exist" in text
    assert "parent weights '/no/such/weights' does not exist" in text
    assert ("'nemo_rl' is not installed" in text) == NO_NEMO and ("'ray' is not installed" in text) == NO_RAY


def test_a_hub_id_is_not_checked_as_a_path(tmp_path):
    assert backend_problems(model="google/gemma-4-E2B-it", gpus_needed=0, gpu_count=lambda: 0) == \
        backend_problems(model=str(tmp_path), gpus_needed=0, gpu_count=lambda: 0)


@pytest.mark.skipif(not NO_NEMO, reason="NeMo-RL is installed")
def test_launch_without_nemo_rl_names_what_is_missing(tmp_path):
    path = write_config(tmp_path, "e2b_shared_104", model_name=str(tmp_path / "gemma"))
    with pytest.raises(BackendUnavailableError) as caught:
        launch_training(path)
    message = str(caught.value)
    assert isinstance(caught.value, NegotiationError)
    assert message.startswith("NeMo-RL backend unavailable: ")
    assert "'nemo_rl' is not installed" in message and "GPUs: 1 needed" in message
    assert f"model checkpoint path '{tmp_path / 'gemma'}'" in message
    weights = tmp_path.resolve() / "e2b_shared_init" / "checkpoints" / "step_64" / "policy" / "weights"
    assert f"parent checkpoint weights (negotiation.parent_weights) '{weights}'" in message


@pytest.mark.skipif(not NO_RAY, reason="Ray is installed")
def test_the_actor_class_needs_ray():
    with pytest.raises(BackendUnavailableError, match="'ray' cannot be imported"):
        environment_actor_class()


def test_a_yaml_without_our_section_is_refused(tmp_path):
    path = tmp_path / "plain.yaml"
    path.write_text("grpo: {num_prompts_per_step: 16}\n")
    with pytest.raises(ConfigError, match="plain.yaml:negotiation: missing"):
        read_train_config(path)


def test_a_stale_prompt_or_builder_is_refused_before_any_backend_check(tmp_path):
    with pytest.raises(ConfigError, match="negotiation.prompt_hash: the training prompt changed"):
        launch_training(write_config(tmp_path, "e2b_shared_init", {"prompt_hash": "stale"}))
    with pytest.raises(ConfigError, match="negotiation.prompt_builder: cannot load 'nowhere:fn'"):
        launch_training(write_config(tmp_path, "e2b_shared_init", {"prompt_builder": "nowhere:fn"}))


def test_existing_checkpoints_are_not_resumed_silently(tmp_path):
    path = write_config(tmp_path, "e2b_shared_104")
    (tmp_path / "e2b_shared_cont" / "checkpoints" / "step_8").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"holds \['step_8'\]; NeMo-RL would resume.*#2955"):
        launch_training(path)
    if NO_NEMO:  # accepting the resume gets as far as the backend check
        with pytest.raises(BackendUnavailableError):
            launch_training(path, resume=True)


def test_the_mlflow_run_carries_the_arm_tags_and_links_the_parent(tmp_path, monkeypatch):
    import json
    from types import SimpleNamespace

    from mlflow.tracking import MlflowClient

    from negotiation.training.nemo._launch import _open_mlflow_run, _reopen_mlflow_run

    # A file store: no database migrations to wait for, and only tags are written here.
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = (tmp_path / "mlruns").as_uri()
    parent_dir = tmp_path / "e2b_shared_init"
    parent_dir.mkdir()
    (parent_dir / "run.json").write_text(json.dumps({"mlflow_run_id": "parent-id"}))
    config = SimpleNamespace(
        logger={"mlflow": {"experiment_name": "paper", "run_name": "e2b_shared_cont", "tracking_uri": uri}},
        checkpointing={"checkpoint_dir": str(tmp_path / "e2b_shared_cont" / "checkpoints")})
    plan = plan_run(PAPER, "e2b_shared_104")
    run_id = _open_mlflow_run(config, plan, {"protocol_hash": "p", "prompt_hash": "q"}, tmp_path)
    assert config.logger["mlflow"]["run_id"] == run_id
    run = MlflowClient(tracking_uri=uri).get_run(run_id)
    tags = run.data.tags
    assert (tags["study"], tags["arm"], tags["size"], tags["lr_multiple"]) == ("paper", "e2b_shared_cont", "e2b", "1.0")
    assert (tags["parent_run"], tags["parent_arm"], tags["step_offset"]) == ("parent-id", "e2b_shared_init", "64")
    assert (tags["protocol_hash"], tags["prompt_hash"], tags["requested_arm"]) == ("p", "q", "e2b_shared_104")
    assert tags["backend"] == "nemo-rl" and tags["phase"] == "training" and tags["git_commit"]
    # A resumed launch logs into the same run.
    (tmp_path / "e2b_shared_cont").mkdir()
    (tmp_path / "e2b_shared_cont" / "run.json").write_text(json.dumps({"mlflow_run_id": run_id}))
    again = SimpleNamespace(logger={"mlflow": {}})
    assert _reopen_mlflow_run(again, tmp_path / "e2b_shared_cont") == run_id == again.logger["mlflow"]["run_id"]


def test_a_continuation_logs_at_combined_steps_and_loads_only_the_parent_weights():
    from negotiation.training.nemo._launch import _load_parent_weights, _offset_steps

    calls = []

    class Logger:
        def log_metrics(self, metrics, step, prefix="", step_finished=False):
            calls.append((step, prefix))

    logger = Logger()
    _offset_steps(logger, 64)
    logger.log_metrics({"reward": 0.1}, 1, prefix="train")
    logger.log_metrics({"accuracy": 0.2}, step=8, prefix="validation")
    assert calls == [(65, "train"), (72, "validation")]

    class Policy:
        def run_all_workers_single_data(self, method, **kwargs):
            calls.append((method, kwargs))

    class Synchronizer:
        def sync_weights(self):
            calls.append("synced")

    calls.clear()
    _load_parent_weights(Policy(), type("Generation", (), {"weight_synchronizer": Synchronizer()})(), "/p/weights")
    # Weights only: no optimizer or scheduler state, so the continuation's schedule restarts.
    assert calls == [("load_checkpoint", {"weights_path": "/p/weights", "optimizer_path": None}), "synced"]
