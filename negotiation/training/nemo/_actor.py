"""The NeMo-RL ``EnvironmentInterface`` Ray actor around ``NegotiationStepLogic``.

The class is defined on first use, so importing this module needs neither Ray nor NeMo-RL;
``environment_actor_class()`` imports both and raises ``BackendUnavailableError`` naming the
missing one. The actor is created directly by the launcher (``.options(...).remote(cfg)``), in
the sliding-puzzle style, so no entry in NeMo-RL's env registries is needed.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping

from negotiation.training.nemo._backend import import_backend
from negotiation.training.nemo._state import NemoEnvSettings
from negotiation.training.nemo._step import NegotiationStepLogic, StepOutcome, return_metrics

__all__ = ["environment_actor_class", "environment_class", "to_environment_return"]


def to_environment_return(outcome: StepOutcome) -> Any:
    """``StepOutcome`` as NeMo-RL's ``EnvironmentReturn`` (float32 rewards, bool terminateds)."""
    torch = import_backend("torch")
    interfaces = import_backend("nemo_rl.environments.interfaces")
    return interfaces.EnvironmentReturn(
        observations=outcome.observations,
        metadata=outcome.metadata,
        next_stop_strings=outcome.next_stop_strings,
        rewards=torch.tensor(outcome.rewards, dtype=torch.float32),
        terminateds=torch.tensor(outcome.terminateds, dtype=torch.bool),
        answers=outcome.answers,
    )


def _strip_tensors(message_logs: list[list[Mapping[str, Any]]]) -> list[list[dict[str, Any]]]:
    # NeMo-RL already passes role/content only; keep just those in case a version does not.
    return [[{"role": m.get("role"), "content": m.get("content")} for m in log] for log in message_logs]


@lru_cache(maxsize=1)
def environment_class() -> type:
    """``NegotiationEnvironment``, a NeMo-RL ``EnvironmentInterface`` (plain class, not yet a Ray actor)."""
    interfaces = import_backend("nemo_rl.environments.interfaces")

    class NegotiationEnvironment(interfaces.EnvironmentInterface):
        """Drives the negotiation engine: one seller generation per step, the buyer's reply as
        the observation, rewards with the front-loaded floor."""

        def __init__(self, cfg: Mapping[str, Any]):
            self.settings = NemoEnvSettings.model_validate(dict(cfg))
            self.logic = NegotiationStepLogic(self.settings)

        def step(self, message_log_batch: list, metadata: list) -> Any:
            return to_environment_return(self.logic.step(_strip_tensors(message_log_batch), metadata))

        def global_post_process_and_metrics(self, batch: Any) -> tuple[Any, dict[str, float]]:
            # GRPO never calls this (NeMo-RL notes, gotcha 4); it is implemented so evaluation
            # scripts that do call it get the same summary the trainer would log.
            returns = batch["total_reward"] if "total_reward" in batch else batch.get("rewards", [])
            values = returns.tolist() if hasattr(returns, "tolist") else list(returns)
            return batch, return_metrics(values, self.settings)

        def shutdown(self) -> None:
            self.logic.close()

    NegotiationEnvironment.__module__ = __name__
    NegotiationEnvironment.__qualname__ = "NegotiationEnvironment"
    return NegotiationEnvironment


@lru_cache(maxsize=1)
def environment_actor_class() -> Any:
    """The Ray actor class of ``NegotiationEnvironment``; create it with ``.options(...).remote(cfg)``."""
    ray = import_backend("ray")
    return ray.remote(environment_class())
