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

__all__ = ["ENV_NAME", "TASK_NAME", "EpisodeState", "NemoEnvSettings", "env_settings", "protocol_env_settings",
           "replay"]

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
    """``env.negotiation`` of the GRPO YAML: everything the environment actor needs."""

    version: Literal[1] = 1
    """Record format version."""
    study: str
    """Study whose protocol supplied the constants below."""
    max_rounds: int = Field(gt=0)
    """T: rounds before a no-deal."""
    no_deal_penalty: float = Field(ge=0)
    """λ of Eq. 1; also the floor paid on the first step."""
    g_fmt: float = Field(ge=0)
    """Malformed-turn penalty weight of Eq. 1."""
    g_len: float = Field(ge=0)
    """Length penalty weight of Eq. 1."""
    t_soft: float = Field(gt=0)
    """Soft length budget in rounds."""
    accept_applies_terms: bool
    """Training-phase ACCEPT flag: terms attached to an ACCEPT are applied first."""
    dirichlet_alpha: float = Field(gt=0)
    """Concentration of the importance prior scenarios are drawn with."""
    converge_from_turn: int = Field(gt=0)
    """Protocol turn from which prompts say to converge (passed to the prompt renderer)."""
    prompt_template: str = "training"
    """Prompt variant (``negotiation.env.PROMPT_TEMPLATES``) the seller's chat is rendered with."""
    seller_label: str = "nemo-rl:policy"
    """Seller name written into episode records built by the environment."""
    turn_tags: TurnTags | None = None
    """Turn tags of the arm's tokenizer; filled in by the launcher when the YAML lacks them."""

    def env_config(self) -> EnvConfig:
        """The engine configuration (training phase)."""
        return EnvConfig(max_rounds=self.max_rounds, no_deal_penalty=self.no_deal_penalty,
                         g_fmt=self.g_fmt, g_len=self.g_len, t_soft=self.t_soft,
                         accept_applies_terms=self.accept_applies_terms, phase="training")


def env_settings(study: str, root: Path | None = None, tags: TurnTags | None = None) -> NemoEnvSettings:
    """Settings for ``study``'s training phase, read from its protocol (never retyped)."""
    from negotiation.study import load_study

    return protocol_env_settings(load_study(study, root).protocol, tags)


def protocol_env_settings(protocol, tags: TurnTags | None = None) -> NemoEnvSettings:
    """Settings for the training phase of a loaded ``negotiation.protocol.Protocol``."""
    from negotiation.training import training_env  # the demo trainer's protocol -> EnvConfig map

    config, environment = training_env(protocol), protocol.environment
    return NemoEnvSettings(study=protocol.study, max_rounds=config.max_rounds,
                           no_deal_penalty=config.no_deal_penalty, g_fmt=config.g_fmt,
                           g_len=config.g_len, t_soft=config.t_soft,
                           accept_applies_terms=config.accept_applies_terms,
                           dirichlet_alpha=environment.dirichlet_alpha,
                           converge_from_turn=environment.converge_from_turn, turn_tags=tags)


@lru_cache(maxsize=64)
def _domain(name: str) -> Domain:
    return load_domain(name)


@lru_cache(maxsize=4096)
def _scenario(domain: str, seed: int, alpha: float) -> Scenario:
    return make_scenario(_domain(domain), seed, alpha)


def replay(state: EpisodeState, settings: NemoEnvSettings) -> Negotiation:
    """The engine with every recorded turn of ``state`` applied again."""
    game = Negotiation(_scenario(state.domain, state.seed, settings.dirichlet_alpha),
                       settings.env_config(), sample_seed=state.sample_seed)
    for text in state.turns:
        game.apply(text)
    return game
