"""MLflow tracking shared by training, evaluation and analysis runs (one experiment per study)."""

from typing import Any

from negotiation._lazy import lazy_attribute
from negotiation.tracking._mlflow import (
    DEFAULT_EXPERIMENT_PREFIX,
    DEFAULT_TRACKING_URI,
    EXPERIMENT_PREFIX_ENV,
    MlflowTracker,
    NullTracker,
    describe_experiment,
    experiment_description,
    experiment_id,
    experiment_name,
    flatten,
    frozen_requirements,
    git_commit,
    retrying,
    source_tags,
    store_lock,
    tracking_uri,
)
from negotiation.tracking._record import (
    RECORD_FILE, RECORD_VERSION, TIMES_FILE, RecordingTracker, log_recorded_run, read_recorded_run, read_run_times,
)
from negotiation.tracking._registry import (
    MODEL_FORMAT, READ_ALIAS, SELLER_ARTIFACTS, log_dataset_input, register_seller, registered_model_name,
)

__all__ = [
    "COPY_LIMIT_BYTES", "DEFAULT_EXPERIMENT_PREFIX", "SELLER_ARTIFACTS", "DEFAULT_TRACKING_URI", "EXPERIMENT_PREFIX_ENV",
    "MODEL_ARTIFACTS", "MODEL_FORMAT", "MlflowTracker", "NullTracker", "READ_ALIAS",
    "RECORD_FILE", "RECORD_VERSION", "RecordingTracker", "SellerModel", "TIMES_FILE", "build_seller",
    "checkpoint_folder", "describe_experiment", "experiment_description", "log_recorded_run", "log_seller_model", "read_recorded_run",
    "read_run_times", "experiment_id", "experiment_name", "flatten", "frozen_requirements", "git_commit",
    "log_dataset_input", "register_seller", "registered_model_name", "retrying", "source_tags",
    "store_lock", "tracking_uri",
]

# The pyfunc model subclasses MLflow's PythonModel: loaded on first use, so a trainer that only
# records its run never imports MLflow.
# Logging a seller model reads agent specs (negotiation.agents): loaded on first use too, so the
# stages that only log runs do not depend on the agents' code.
_LAZY = {"SellerModel": "_pyfunc", "build_seller": "_pyfunc", "COPY_LIMIT_BYTES": "_models",
         "MODEL_ARTIFACTS": "_models", "checkpoint_folder": "_models", "log_seller_model": "_models"}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, name)
