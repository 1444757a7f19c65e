"""What travels through NeMo-RL: the per-episode state (``extra_env_info``) and the env settings.

NeMo-RL hands each ``env.step`` call the sample's ``extra_env_info`` and writes back whatever
metadata the step returns. The episode state is therefore a plain JSON-able record of the
scenario, the buyer and every turn played so far; the environment rebuilds the engine from it
on every step instead of keeping engines in the actor, so a restarted actor (NeMo-RL's env
actors run with retries) or a replayed batch gives the same result.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from negotiation.env import Domain, EnvConfig, Negotiation, Scenario, load_domain, make_scenario
from negotiation.lm import TurnTags
from negotiation.protocol import Environment, Protocol, environment_config
from negotiation.study import Study, as_study

__all__ = ["ENV_NAME", "TASK_NAME", "EpisodeState", "NemoEnvSettings", "RewardKind", "env_settings", "protocol_env_settings",
           "replay"]

RewardKind = Literal["eq1", "parse"]
"""The environment's reward kinds (``NemoEnvSettings.reward``)."""

ENV_NAME = "negotiation"
"""Key of the environment under ``env:`` in the GRPO YAML."""
TASK_NAME = "negotiation"
"""``task_name`` of every datum; the key of ``task_to_env``."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class EpisodeState(_Record):
    """One episode as NeMo-RL carries it in ``extra_env_info``."""

    version: Literal[1] = 1
    """Record format version."""
    domain: str
    """Domain name (``protocol/domains/<domain>.yaml``)."""
    seed: int = Field(ge=0)
    """Scenario seed, from the protocol's training seed block."""
    buyer: str
    """Agent spec of the training buyer attached to this scenario."""
    sample_seed: int = Field(ge=0)
    """Seed of the buyer's reply randomness (prose templates)."""
    turns: tuple[str, ...] = ()
    """Raw text of every turn played so far, seller first, both parties in order."""
    seller_steps: int = Field(default=0, ge=0)
    """Seller turns played so far, i.e. environment steps taken."""


class NemoEnvSettings(_Record):
    """``env.negotiation`` of the GRPO YAML: everything the environment actor needs.

    The game and reward constants travel as the protocol's own ``environment`` section and are
    validated by its model on arrival; the actor derives the training-phase engine config
    from it (``environment_config``), the same conversion every other entry point uses.
    """

    version: Literal[2] = 2
    """Record format version (2: the constants are the protocol's ``environment`` section)."""
    study: str
    """Study whose protocol supplied the environment."""
    environment: Environment
    """The protocol's ``environment`` section: T, λ, g_fmt, g_len, t_soft, the Dirichlet
    concentration, the per-phase ACCEPT flag and the converge turn."""
    prompt_template: str = "training"
    """Prompt variant (``negotiation.env.PROMPT_TEMPLATES``) the seller's chat is rendered with."""
    seller_label: str = "nemo-rl:policy"
    """Seller name written into episode records built by the environment."""
    turn_tags: TurnTags | None = None
    """Turn tags of the arm's tokenizer; filled in by the launcher when the YAML lacks them."""
    reward: RewardKind = "eq1"
    """What an episode returns. ``eq1``: the study's reward (Eq. 1 under the front-loaded floor:
    ``-λ`` on the first step, ``Eq. 1 + λ`` on the terminating one). ``parse``: a format-only
    task of the learning ladder (``protocol/lm/learning.yaml``): 1 on the first step if the
    seller's first turn parsed to an action, else 0, and 0 on every later step, with no floor,
    so the return is the same whether the environment or the driver ends the episode."""

    def env_config(self) -> EnvConfig:
        """The engine configuration (training phase)."""
        return environment_config(self.environment, "training")


def env_settings(study: Study | str, root: Path | None = None, tags: TurnTags | None = None) -> NemoEnvSettings:
    """Settings for ``study``'s training phase, read from its protocol (never retyped)."""
    return protocol_env_settings(as_study(study, root).protocol, tags)


def protocol_env_settings(protocol: Protocol, tags: TurnTags | None = None) -> NemoEnvSettings:
    """Settings for the training phase of a loaded ``negotiation.protocol.Protocol``."""
    return NemoEnvSettings(study=protocol.study, environment=protocol.environment, turn_tags=tags)


@lru_cache(maxsize=64)
def _domain(name: str) -> Domain:
    return load_domain(name)


@lru_cache(maxsize=4096)
def _scenario(domain: str, seed: int, alpha: float) -> Scenario:
    return make_scenario(_domain(domain), seed, alpha)


def replay(state: EpisodeState, settings: NemoEnvSettings) -> Negotiation:
    """The engine with every recorded turn of ``state`` applied again."""
    game = Negotiation(_scenario(state.domain, state.seed, settings.environment.dirichlet_alpha),
                       settings.env_config(), sample_seed=state.sample_seed)
    for text in state.turns:
        game.apply(text)
    return game
