"""NeMo-RL backend: trains language-model sellers with NeMo-RL's GRPO on its multi-turn driver.

NeMo-RL is installed from its own checkout and is never imported at module level: everything here
(step logic, turn tags, scenario datasets, config generation, checkpoint export checks) imports
and runs without it, and only ``launch_training``, the Ray actor and the DCP converter need it.
See ``docs/nemo-rl.md``.
"""

from negotiation.training.nemo._actor import environment_actor_class, environment_class, to_environment_return
from negotiation.training.nemo._backend import BackendUnavailableError, backend_problems, require_backend
from negotiation.training.nemo._config import DEFAULT_PROMPT_BUILDER, grpo_config, lr_schedule, stop_token_ids, write_train_config
from negotiation.training.nemo._dataset import (
    build_datums, load_prompt_builder, training_scenarios, validation_scenarios,
)
from negotiation.training.nemo._export import CheckpointLayoutError, checkpoint_format, export_hf
from negotiation.training.nemo._launch import RUN_RECORD, launch_training, read_train_config
from negotiation.training.nemo._plan import RunPaths, RunPlan, plan_run, resolve_tracking_uri
from negotiation.training.nemo._run_config import default_runs_dir, load_hf_tokenizer, write_run_config
from negotiation.training.nemo._state import (
    ENV_NAME, TASK_NAME, EpisodeState, NemoEnvSettings, RewardKind, env_settings, protocol_env_settings, replay,
)
from negotiation.training.nemo._step import NegotiationStepLogic, StepOutcome, return_metrics
from negotiation.lm import (
    TurnTagError, TurnTags, check_round_trip, derive_turn_tags, template_kwargs,
)

__all__ = [
    "DEFAULT_PROMPT_BUILDER", "ENV_NAME", "RUN_RECORD", "TASK_NAME", "BackendUnavailableError", "CheckpointLayoutError",
    "EpisodeState", "NegotiationStepLogic", "NemoEnvSettings", "RewardKind", "RunPaths", "RunPlan", "StepOutcome",
    "TurnTagError", "TurnTags", "backend_problems", "build_datums",
    "check_round_trip", "checkpoint_format", "default_runs_dir", "derive_turn_tags", "env_settings",
    "environment_actor_class", "environment_class", "protocol_env_settings", "replay", "export_hf", "grpo_config", "launch_training", "load_hf_tokenizer", "load_prompt_builder",
    "lr_schedule", "plan_run", "read_train_config", "require_backend", "resolve_tracking_uri",
    "return_metrics", "stop_token_ids", "template_kwargs", "to_environment_return",
    "training_scenarios", "validation_scenarios", "write_run_config", "write_train_config",
]
