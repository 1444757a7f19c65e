"""MLflow tracking shared by training, evaluation and analysis runs (one experiment per study)."""

from negotiation.tracking._mlflow import (
    DEFAULT_TRACKING_URI,
    MlflowTracker,
    NullTracker,
    experiment_id,
    flatten,
    git_commit,
    retrying,
    store_lock,
    tracking_uri,
)

__all__ = [
    "DEFAULT_TRACKING_URI", "MlflowTracker", "NullTracker", "experiment_id", "flatten", "git_commit",
    "retrying", "store_lock", "tracking_uri",
]
