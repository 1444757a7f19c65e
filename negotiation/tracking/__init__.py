"""MLflow tracking shared by training, evaluation and analysis runs (one experiment per study)."""

from negotiation.tracking._mlflow import (
    DEFAULT_EXPERIMENT_PREFIX,
    DEFAULT_TRACKING_URI,
    EXPERIMENT_PREFIX_ENV,
    MlflowTracker,
    NullTracker,
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
from negotiation.tracking._record import RECORD_FILE, RECORD_VERSION, RecordingTracker, log_recorded_run, read_recorded_run
from negotiation.tracking._registry import SELLER_ARTIFACTS, log_dataset_input, register_seller, registered_model_name

__all__ = [
    "DEFAULT_EXPERIMENT_PREFIX", "SELLER_ARTIFACTS", "DEFAULT_TRACKING_URI", "EXPERIMENT_PREFIX_ENV", "MlflowTracker", "NullTracker",
    "RECORD_FILE", "RECORD_VERSION", "RecordingTracker", "log_recorded_run", "read_recorded_run",
    "experiment_id", "experiment_name", "flatten", "frozen_requirements", "git_commit", "log_dataset_input", "register_seller",
    "registered_model_name", "retrying", "source_tags",
    "store_lock", "tracking_uri",
]
