"""Eq. 1 of the paper as a function of the episode record, and its front-loaded form.

``r = [Ũ on deal, -λ on no-deal] - g_fmt n_bad / n_policy - g_len max(0, n - t_soft) / (T - t_soft)``
with ``n`` the episode's length in rounds and ``n_bad / n_policy`` the fraction of the seller's
own turns that failed to parse.
"""

from __future__ import annotations

from negotiation.env._engine import EnvConfig, Episode


def eq1_reward(outcome_term: float, n_bad_policy: int, n_policy: int, n_rounds: int,
               config: EnvConfig) -> float:
    """Eq. 1 from its ingredients."""
    fmt = n_bad_policy / n_policy if n_policy else 0.0
    span = config.max_rounds - config.t_soft
    # t_soft = T (a protocol may set the fraction to 1) leaves no room past the budget: no penalty.
    length = max(0.0, n_rounds - config.t_soft) / span if span > 0 else 0.0
    return outcome_term - config.g_fmt * fmt - config.g_len * length


def episode_reward(episode: Episode) -> float:
    """The seller's Eq. 1 reward for a finished episode."""
    return eq1_reward(episode.S, episode.n_bad("seller"), episode.n_turns_of("seller"),
                      episode.n_rounds, episode.config)


def frontloaded_step_rewards(n_policy_steps: int, total: float, no_deal_penalty: float,
                             *, terminated: bool = True) -> list[float]:
    """Per-step rewards whose sum is Eq. 1 and whose truncation keeps the floor.

    NeMo-RL sums per-step rewards into the return and has no post-batch hook, so the floor
    ``-λ`` is paid on the first step and ``Eq. 1 + λ`` on the terminating step (paper App. H).
    A truncated episode (driver stopped first) keeps ``-λ``.
    """
    if n_policy_steps < 1:
        raise ValueError(f"an episode has at least one policy step, got {n_policy_steps}")
    steps = [0.0] * n_policy_steps
    steps[0] = -no_deal_penalty
    if terminated:
        steps[-1] += total + no_deal_penalty
    return steps
