"""Lockstep rollouts: many ``Negotiation``s advanced together, one policy forward per seller turn.

Every episode starts with the seller, and the parties alternate, so all episodes still running
are at the same turn: on a seller turn the policy acts on all their views in one batch; on a
buyer turn each scripted buyer replies. Every message goes through ``Negotiation.apply`` as
text, so training episodes are parsed exactly as evaluation episodes are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from negotiation.agents import FeatureBatch, Policy, concat_features
from negotiation.env import EnvConfig, Episode, Negotiation, Scenario, episode_reward


@dataclass(frozen=True)
class Rollouts:
    """Finished episodes and the policy's decisions in them."""

    episodes: list[Episode]
    rewards: np.ndarray
    """``(n_episodes,)`` Eq. 1 reward of each episode."""
    features: FeatureBatch
    """One row per seller turn, over all episodes."""
    actions: np.ndarray
    """``(n_rows, N_TOKENS)`` the decisions of those turns."""
    row_episode: np.ndarray
    """``(n_rows,)`` index of the episode each row belongs to."""

    @property
    def scores(self) -> np.ndarray:
        """``S`` of each episode (Ũ on a deal, ``-λ`` otherwise)."""
        return np.array([e.S for e in self.episodes])


def play(policy: Policy, seller_spec: str, jobs: Sequence[tuple[Scenario, Any, int]],
         env: EnvConfig) -> Rollouts:
    """Play every ``(scenario, buyer agent, sample seed)`` job to the end in lockstep."""
    games = [Negotiation(scn, env, sample_seed=seed) for scn, _, seed in jobs]
    buyers = [buyer for _, buyer, _ in jobs]
    feats: list[FeatureBatch] = []
    acts: list[np.ndarray] = []
    rows: list[np.ndarray] = []
    while True:
        active = [k for k, g in enumerate(games) if not g.done]
        if not active:
            break
        if games[active[0]].next_role == "seller":
            turns = policy.act([games[k].view() for k in active])
            for k, text in zip(active, turns.texts):
                games[k].apply(text)
            feats.append(turns.features)
            acts.append(turns.actions)
            rows.append(np.asarray(active, dtype=np.int64))
        else:
            for k in active:
                games[k].apply(buyers[k].respond(games[k].view()))
    episodes = [g.record(seller_spec, getattr(b, "spec", str(b))) for g, b in zip(games, buyers)]
    rewards = np.array([episode_reward(e) for e in episodes])
    return Rollouts(episodes, rewards, concat_features(feats), np.concatenate(acts),
                    np.concatenate(rows))
