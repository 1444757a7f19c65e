"""Where MLflow users look for "which checkpoint is arm X" and "what data did this run see":
one registered model per arm (a version per distinct seller record) and the scenario tables
as the evaluation runs' dataset inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from negotiation.tracking._mlflow import DEFAULT_EXPERIMENT_PREFIX, EXPERIMENT_PREFIX_ENV, retrying

MODEL_FORMAT = "pyfunc-seller/1"
"""``model_format`` tag of a version whose source is a loadable model (older versions pointed at
the seller record alone and are superseded by one with this tag)."""
READ_ALIAS = "read"
"""Alias of the version an arm is evaluated with (``models:/<name>@read``)."""
_DESCRIPTION = ("Seller arm evaluated by the study; each version is one selected checkpoint logged as an MLflow "
                "pyfunc model: `mlflow.pyfunc.load_model('models:/<name>@read').predict(views)`.")

SELLER_ARTIFACTS = "seller"
"""Artifact folder of an evaluation run holding the seller record a model version points at."""


def registered_model_name(study: str, arm: str) -> str:
    """``<prefix>.<study>.<arm>`` (the experiment prefix, dots instead of slashes: names are URL parts)."""
    import os

    prefix = os.environ.get(EXPERIMENT_PREFIX_ENV, "").strip().strip("/") or DEFAULT_EXPERIMENT_PREFIX
    return f"{prefix.replace('/', '.')}.{study}.{arm}"


def _registered_model(client: Any, name: str, description: str, model_tags: Mapping[str, str]) -> dict[str, str]:
    """Create registered model ``name`` with its description and tags, or bring them up to date;
    return its aliases (alias -> version)."""
    from mlflow.exceptions import MlflowException

    try:
        retrying(lambda: client.create_registered_model(name, tags={k: str(v) for k, v in model_tags.items()},
                                                        description=description))
        return {}
    except MlflowException as exc:
        if "already exists" not in str(exc).lower():
            raise
    current = retrying(lambda: client.get_registered_model(name))
    if current.description != description:
        retrying(lambda: client.update_registered_model(name, description=description))
    for key, value in model_tags.items():
        if current.tags.get(key) != str(value):
            retrying(lambda: client.set_registered_model_tag(name, key, str(value)))
    return {alias: str(version) for alias, version in (current.aliases or {}).items()}


def register_seller(client: Any, name: str, run_id: str, tags: Mapping[str, str], *, log_model: Callable[[], str],
                    model_tags: Mapping[str, str] | None = None, aliases: Sequence[str] = (READ_ALIAS,),
                    description: str = "") -> str:
    """The version of registered model ``name`` for this seller record (``tags['seller_sha256']``),
    created once with the model ``log_model()`` logs and returns the URI of: the same seller
    evaluated again adds no version. The version gets ``aliases`` (moved from an older one)."""
    have = _registered_model(client, name, description or _DESCRIPTION, model_tags or {})
    found = retrying(lambda: client.search_model_versions(f"name = '{name}'"))
    match = next((v for v in found if v.tags.get("seller_sha256") == tags["seller_sha256"]
                  and v.tags.get("model_format") == MODEL_FORMAT), None)
    if match is None:
        source = log_model()
        version_tags = {**{k: str(v) for k, v in tags.items()}, "model_format": MODEL_FORMAT}
        match = retrying(lambda: client.create_model_version(name, source=source, run_id=run_id, tags=version_tags))
    for alias in aliases:  # (search_model_versions leaves aliases out: the model's own list has them)
        if have.get(alias) != str(match.version):
            retrying(lambda: client.set_registered_model_alias(name, alias, str(match.version)))
    return str(match.version)


def log_dataset_input(client: Any, run_id: str, path: Path, *, name: str, context: str) -> None:
    """Log the Parquet table at ``path`` as a dataset input of the run (schema, digest, source)."""
    import mlflow.data
    import pandas as pd
    from mlflow.entities import DatasetInput, InputTag

    import warnings

    with warnings.catch_warnings():  # MLflow's hints about integer columns and ambiguous local sources
        warnings.simplefilter("ignore", UserWarning)
        dataset = mlflow.data.from_pandas(pd.read_parquet(path), source=str(path), name=name)
    entity = DatasetInput(dataset._to_mlflow_entity(), tags=[InputTag("mlflow.data.context", context)])
    retrying(lambda: client.log_inputs(run_id, datasets=[entity]))
