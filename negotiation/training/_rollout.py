"""Lockstep rollouts: many ``Negotiation``s advanced together, one policy forward per seller turn.

Every episode starts with the seller, and the parties alternate, so all episodes still running
are at the same turn: on a seller turn the policy acts on all their views in one batch; on a
buyer turn each scripted buyer replies. Every message goes through ``Negotiation.apply`` as
text, so training episodes are parsed exactly as evaluation episodes are.

The games live in ``PolicyShards``: with one process all of them here; with more, the per-episode
work (features, text, parsing, buyers) of each shard runs in its own process at the same time,
while the forward pass and the sampling stay here over the whole batch, so the rollouts are the
same bytes with any number of processes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from negotiation.agents import EpisodeOutcome, FeatureBatch, Policy, PolicyShards, concat_features
from negotiation.env import EnvConfig, Scenario


@dataclass(frozen=True)
class Rollouts:
    """Finished episodes' outcomes and the policy's decisions in them."""

    outcomes: list[EpisodeOutcome]
    """Per episode, in job order: S, the Eq. 1 reward, deal, rounds, the seller's bad turns."""
    features: FeatureBatch
    """One row per seller turn, over all episodes."""
    actions: np.ndarray
    """``(n_rows, N_TOKENS)`` the decisions of those turns."""
    row_episode: np.ndarray
    """``(n_rows,)`` index of the episode each row belongs to."""

    @property
    def rewards(self) -> np.ndarray:
        """``(n_episodes,)`` Eq. 1 reward of each episode."""
        return np.array([o.reward for o in self.outcomes])

    @property
    def scores(self) -> np.ndarray:
        """``S`` of each episode (Ũ on a deal, ``-λ`` otherwise)."""
        return np.array([o.S for o in self.outcomes])


def play(policy: Policy, seller_spec: str, jobs: Sequence[tuple[Scenario, Any, int]],
         env: EnvConfig, shards: PolicyShards | None = None) -> Rollouts:
    """Play every ``(scenario, buyer agent, sample seed)`` job to the end in lockstep, over
    ``shards`` (default: all games in this process)."""
    shards = shards if shards is not None else PolicyShards(1)
    feats: list[FeatureBatch] = []
    acts: list[np.ndarray] = []
    rows: list[np.ndarray] = []
    batch = shards.begin(jobs, env, policy.bins)
    while len(batch.index):
        actions = policy.decide(batch.features, batch.keys)
        feats.append(batch.features)
        acts.append(actions)
        rows.append(batch.index)
        batch = shards.advance(actions)
    return Rollouts(shards.outcomes(seller_spec), concat_features(feats), np.concatenate(acts), np.concatenate(rows))
