"""Every registered seller loads back with MLflow's own API and plays like the seller it records."""

from __future__ import annotations

import json

import mlflow.pyfunc
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from negotiation.agents import Policy, PolicyArch, make_agent
from negotiation.pipeline import run_track
from negotiation.study import ResultsLayout
from negotiation.tracking import MODEL_FORMAT, READ_ALIAS, registered_model_name
from tests.agents.car_prefs import view


def _arm(layout: ResultsLayout, arm: str, seller: str, weights: str | None = None, study: str = "demo") -> None:
    out = layout.dir / "evaluate" / arm
    out.mkdir(parents=True)
    pd.DataFrame({"arm": arm, "S": [0.5, 0.7]}).to_parquet(out / "episodes.parquet", index=False)
    (out / "metrics.json").write_text(json.dumps({"S": 0.6, "episodes": 2}))
    layout.seller(arm).parent.mkdir(parents=True)
    layout.seller(arm).write_text(json.dumps({"version": 1, "study": study, "arm": arm, "seller": seller,
                                              "weights_sha256": weights}))


@pytest.fixture()
def tracked(tmp_path, monkeypatch):
    """A store with a base policy arm (weights in a tmp folder) and a scripted reference arm."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    checkpoint = tmp_path / "init/w16"
    Policy.init(PolicyArch(width=16, depth=1), seed=3).save(checkpoint)
    (checkpoint / "optimizer.pt").write_bytes(b"not a seller's weights")
    layout = ResultsLayout(tmp_path / "outputs/demo")
    _arm(layout, "w16_base", f"policy:{checkpoint}", "abc")
    _arm(layout, "ref_boulware", "scripted:boulware")
    return checkpoint, layout, run_track("demo", layout.dir)["evaluation_runs"]


def test_registered_versions_load_with_pyfunc_and_play_like_their_seller(tracked):
    checkpoint, _, logged = tracked
    views = [view(sample_seed=s) for s in (1, 2, 3)]
    for arm, spec in (("w16_base", f"policy:{checkpoint}"), ("ref_boulware", "scripted:boulware")):
        model = mlflow.pyfunc.load_model(f"models:/{registered_model_name('demo', arm)}@{READ_ALIAS}")
        agent = make_agent(spec, "seller")
        assert model.predict(views) == [agent.respond(v).text for v in views]
        assert logged[arm]["model_version"] == "1"


def test_versions_carry_aliases_and_tags_and_the_weights_not_the_optimizer(tracked):
    _, _, logged = tracked
    client = MlflowClient()
    name = registered_model_name("demo", "w16_base")
    model = client.get_registered_model(name)
    assert sorted(model.aliases) == ["init", "read"]
    assert {k: model.tags[k] for k in ("study", "arm", "kind", "size")} == {
        "study": "demo", "arm": "w16_base", "kind": "base", "size": "w16"}
    assert model.tags["protocol_hash"] and "load_model" in model.description
    version = client.get_model_version_by_alias(name, "read")
    assert version.source == f"runs:/{logged['w16_base']['run_id']}/model"
    assert version.tags["model_format"] == MODEL_FORMAT and version.tags["step"] == "0"
    assert version.tags["weights_in_model"] == "true"
    files = {a.path for a in client.list_artifacts(logged["w16_base"]["run_id"], "model/artifacts/checkpoint")}
    assert files == {"model/artifacts/checkpoint/config.json", "model/artifacts/checkpoint/weights.pt"}
    assert sorted(client.get_registered_model(registered_model_name("demo", "ref_boulware")).aliases) == ["read"]


def test_a_rerun_adds_no_version_no_run_and_keeps_the_aliases(tracked):
    _, layout, first = tracked
    assert run_track("demo", layout.dir)["evaluation_runs"] == first
    client = MlflowClient()
    for arm in first:
        name = registered_model_name("demo", arm)
        (version,) = client.search_model_versions(f"name = '{name}'")
        assert READ_ALIAS in client.get_model_version(name, version.version).aliases
    experiment = client.get_experiment_by_name("negotiation/demo")
    assert len(client.search_runs([experiment.experiment_id])) == 2
    assert "tags.phase = 'training'" in experiment.tags["mlflow.note.content"]


@pytest.mark.slow  # two minutes on 2 shared cores: generation with an untrained LM runs to the token cap
def test_an_lm_arm_loads_back_with_its_weights_and_plays_like_its_hf_seller(tmp_path, monkeypatch, tiny_lm):
    """An lm arm's version holds the Hugging Face folder (weights, tokenizer, chat template) and,
    loaded with MLflow's API from another folder, replies as the ``hf:`` seller of the checkpoint."""
    from negotiation.tracking._pyfunc import build_seller

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    layout = ResultsLayout(tmp_path / "outputs/lm")
    _arm(layout, "lm_xs_base", f"hf:{tiny_lm}", "abc", study="lm")
    logged = run_track("lm", layout.dir)["evaluation_runs"]["lm_xs_base"]
    name = registered_model_name("lm", "lm_xs_base")
    assert MlflowClient().get_model_version_by_alias(name, READ_ALIAS).tags["weights_in_model"] == "true"
    files = {a.path.rsplit("/", 1)[-1] for a in MlflowClient().list_artifacts(
        logged["run_id"], "model/artifacts/checkpoint")}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= files
    model = mlflow.pyfunc.load_model(f"models:/{name}@{READ_ALIAS}")
    views = [view(sample_seed=s) for s in (1, 2)]
    replies = model.predict(views)
    direct = build_seller({"study": "lm", "seller": f"hf:{tiny_lm}"}, None)
    assert len(replies) == 2 and replies == [direct.respond(v).text for v in views]
