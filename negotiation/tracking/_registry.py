"""Where MLflow users look for "which checkpoint is arm X" and "what data did this run see":
one registered model per arm (a version per distinct seller record) and the scenario tables
as the evaluation runs' dataset inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from negotiation.tracking._mlflow import DEFAULT_EXPERIMENT_PREFIX, EXPERIMENT_PREFIX_ENV, retrying

SELLER_ARTIFACTS = "seller"
"""Artifact folder of an evaluation run holding the seller record a model version points at."""


def registered_model_name(study: str, arm: str) -> str:
    """``<prefix>.<study>.<arm>`` (the experiment prefix, dots instead of slashes: names are URL parts)."""
    import os

    prefix = os.environ.get(EXPERIMENT_PREFIX_ENV, "").strip().strip("/") or DEFAULT_EXPERIMENT_PREFIX
    return f"{prefix.replace('/', '.')}.{study}.{arm}"


def register_seller(client: Any, name: str, run_id: str, tags: Mapping[str, str]) -> str:
    """The version of registered model ``name`` for this seller record (``tags['seller_sha256']``),
    created once: the same seller evaluated again adds no version."""
    from mlflow.exceptions import MlflowException

    try:
        retrying(lambda: client.create_registered_model(name, description="Seller arm evaluated by the study; "
                                                        "each version is one selected checkpoint (seller.json)."))
    except MlflowException as exc:
        if "already exists" not in str(exc).lower():
            raise
    found = retrying(lambda: client.search_model_versions(f"name = '{name}'"))
    for version in found:
        if version.tags.get("seller_sha256") == tags["seller_sha256"]:
            return str(version.version)
    created = retrying(lambda: client.create_model_version(
        name, source=f"runs:/{run_id}/{SELLER_ARTIFACTS}", run_id=run_id, tags={k: str(v) for k, v in tags.items()}))
    return str(created.version)


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
