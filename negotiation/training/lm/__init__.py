"""Token-level multi-turn GRPO for causal-LM sellers (the ``token`` training backend).

The paper's recipe (§3, Appendix H) on one machine, without NeMo-RL: rollouts through the same
environment step, datums and turn tags as the NeMo-RL adapter (``negotiation.training.nemo``),
the demo trainer's estimator pieces (``loo_advantages``, ``clipped_surrogate``, ``k3_kl``,
``lr_at``), checkpoints as Hugging Face ``step_N/`` folders with ``training_info.json``. transformers
is imported when a model is loaded. See docs/training.md.
"""

from negotiation.training.lm._config import LmArm, LmRuntime, LmTrainConfig
from negotiation.training.lm._protocol import lm_train_config_for
from negotiation.training.lm._precision import MasterAdamW
from negotiation.training.lm._diagnostics import ADVANTAGE_QUANTILES, group_signal
from negotiation.training.lm._loss import (
    TokenBatch, generated_logits, generated_positions, grpo_token_step, micro_batches, token_logprobs_entropy,
)
from negotiation.training.lm._resume import RESUME_FILE, ResumeRecord
from negotiation.training.lm._rollout import EpisodeBook, EpisodeEngine, Generate, TokenEpisodes, play_token_episodes
from negotiation.training.lm._slot_rollout import RolloutStats, SlotRollout
from negotiation.training.lm._seller import GeneratorFactory, HfSeller, default_generator, load_seller, turn_generator
from negotiation.training.lm._trainer import CURVES_FILE, TIMING_FILE, VALIDATION_FILE, train_lm_arm
from negotiation.training.lm._tasks import (
    FROZEN_RATE, VERDICT_FILE, criterion_verdict, needs_frozen_control, task_train_config, task_verdict,
    write_verdict,
)

__all__ = [
    "ADVANTAGE_QUANTILES", "CURVES_FILE", "FROZEN_RATE", "RESUME_FILE", "TIMING_FILE", "VALIDATION_FILE", "VERDICT_FILE",
    "EpisodeBook", "EpisodeEngine", "Generate", "GeneratorFactory", "HfSeller", "LmArm", "LmRuntime", "LmTrainConfig",
    "MasterAdamW", "ResumeRecord", "RolloutStats", "SlotRollout", "TokenBatch", "TokenEpisodes", "criterion_verdict",
    "default_generator", "generated_logits", "generated_positions", "grpo_token_step", "group_signal",
    "lm_train_config_for", "load_seller", "micro_batches",
    "needs_frozen_control", "play_token_episodes", "task_train_config", "task_verdict", "token_logprobs_entropy", "train_lm_arm",
    "turn_generator", "write_verdict",
]
