"""Training: the demo GRPO trainer on the CPU and what every trainer shares.

Shared by the demo trainer and the token-level trainer (``negotiation.training.lm``): the typed
inputs around the protocol's own recipe (``TrainConfig``, ``RunArm``, ``recipe_problems``,
``training_data``), the estimator pieces (``loo_advantages``, ``clipped_surrogate``, ``k3_kl``,
``lr_at``), the course of a run (seeding, schedule, ``step_N/`` checkpoints, curves, MLflow) and
its ``TrainSummary``; the demo policy bases' imitation warm start (``imitate``). The NeMo-RL backend lives in ``negotiation.training.nemo`` and is imported
lazily.
"""

from negotiation.training._checkpoint import (
    TRAINING_INFO_FILE,
    TrainingInfo,
    checkpoint_steps,
    read_training_info,
    write_checkpoint,
)
from negotiation.training._config import ArmTraining, BuyerShare, RunArm, TrainConfig, TrainData, recipe_problems
from negotiation.training._data import ScenarioMaker, TrainItem, training_items, validation_items
from negotiation.training._imitation import IMITATION_RECORD, ImitationRecord, imitate, imitation_corpus
from negotiation.training._grpo import clipped_surrogate, group_advantages, k3_kl, loo_advantages, lr_at, masked_mean
from negotiation.training._protocol import (
    branch_checkpoint,
    final_checkpoint,
    train_config_for,
    training_data,
    training_env,
    training_runs,
    write_initial_policy,
)
from negotiation.training._rollout import Rollouts, play
from negotiation.tracking import DEFAULT_TRACKING_URI, tracking_uri
from negotiation.training._run import CURVES_FILE, VALIDATION_FILE, TrainSummary
from negotiation.training._trainer import train_arm

__all__ = [
    "CURVES_FILE", "DEFAULT_TRACKING_URI", "IMITATION_RECORD", "TRAINING_INFO_FILE", "VALIDATION_FILE",
    "ImitationRecord", "imitate", "imitation_corpus",
    "ArmTraining", "BuyerShare", "Rollouts", "RunArm", "ScenarioMaker", "TrainConfig",
    "TrainData", "TrainItem", "TrainSummary", "TrainingInfo", "checkpoint_steps",
    "branch_checkpoint", "clipped_surrogate", "final_checkpoint", "group_advantages", "k3_kl", "loo_advantages", "lr_at", "masked_mean", "recipe_problems",
    "play", "read_training_info", "train_arm", "train_config_for", "training_data", "training_env", "training_items",
    "training_runs", "tracking_uri", "validation_items", "write_checkpoint", "write_initial_policy",
]
