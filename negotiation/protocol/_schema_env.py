"""Protocol sections about the game itself: environment constants, domains, seeds, buyers, sampling."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from negotiation.protocol._files import StrictModel

__all__ = [
    "AcceptTermsApplied", "Buyers", "Domains", "Environment", "EvaluationBuyer", "NoDealPenalty", "Sampling",
    "SamplingSettings", "SeedBlock", "SeedBlocks", "TrainingBuyer", "check_spec",
]

# kind:target?key=value&key=value; the agents package owns the meaning of kinds and options,
# the protocol only refuses strings that could never parse.
_SPEC = re.compile(r"^(scripted|policy|litellm|vllm|hf):[^?\s]+(\?[A-Za-z_]\w*=[^&\s]*(&[A-Za-z_]\w*=[^&\s]*)*)?$")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def check_spec(text: str) -> str:
    """Reject a seller/buyer spec that is not ``kind:target[?key=value&...]``."""
    if not _SPEC.match(text):
        raise ValueError(
            f"agent spec {text!r} is not 'kind:target[?key=value&...]' with kind one of "
            "scripted, policy, litellm, vllm, hf"
        )
    return text


def _check_name(text: str) -> str:
    if not _NAME.match(text):
        raise ValueError(f"{text!r} is not a snake_case name")
    return text


Spec = Annotated[str, AfterValidator(check_spec)]
Name = Annotated[str, AfterValidator(_check_name)]
NoDealPenalty = Annotated[float, Field(gt=0)]
"""λ of Eq. 1, strictly positive: the paper puts the no-deal outcome ``-λ`` strictly below the
worst deal's ``Ũ = 0``, so the seller has no outside option. Every model holding λ uses this type."""


class AcceptTermsApplied(StrictModel):
    """Whether terms attached to an ACCEPT are applied before the episode closes, per phase."""

    training: bool
    """Training phase (paper: applied)."""
    evaluation: bool
    """Evaluation phase (paper: ignored; the deal closes on the current ledger)."""


class Environment(StrictModel):
    """Constants of the game and of the reward, Eq. 1 (paper §3)."""

    max_rounds: int = Field(gt=0)
    """T: rounds (one seller turn and one buyer turn each) before a no-deal."""
    no_deal_penalty: NoDealPenalty
    """λ: a no-deal scores ``-λ`` in the outcome term of Eq. 1."""
    g_fmt: float = Field(ge=0)
    """Weight of the seller's malformed-turn fraction in Eq. 1."""
    g_len: float = Field(ge=0)
    """Weight of the length penalty in Eq. 1."""
    t_soft_fraction: float = Field(gt=0, le=1)
    """Soft length budget as a fraction of T: ``t_soft = t_soft_fraction * max_rounds`` rounds."""
    dirichlet_alpha: float = Field(gt=0)
    """Concentration of the symmetric Dirichlet prior over each party's term importances."""
    accept_terms_applied: AcceptTermsApplied
    """The accept-terms flag per phase."""
    converge_from_turn: int = Field(gt=0)
    """Turn (1-based, counting both parties) from which both prompts say to converge."""

    @property
    def t_soft(self) -> float:
        """Soft budget in rounds."""
        return self.t_soft_fraction * self.max_rounds

    @property
    def turn_cap(self) -> int:
        """Turns an episode may last: one seller and one buyer turn per round (the engine's
        ``EnvConfig.max_turns`` is built from the same ``max_rounds``)."""
        return 2 * self.max_rounds


class Domains(StrictModel):
    """Which domain schemas (``protocol/domains/<name>.yaml``) the study trains and evaluates on."""

    training: tuple[Name, ...] = Field(min_length=1)
    """Domains of the training distribution (also evaluated)."""
    held_out: tuple[Name, ...]
    """Domains withheld from training and evaluated only."""

    @model_validator(mode="after")
    def _disjoint(self) -> "Domains":
        names = list(self.training) + list(self.held_out)
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"domains listed twice (or both training and held out): {repeated}")
        return self

    @property
    def evaluated(self) -> tuple[str, ...]:
        """Every evaluated domain: training domains, then held-out ones."""
        return self.training + self.held_out


class SeedBlock(StrictModel):
    """A half-open range of scenario seeds ``[start, stop)``."""

    start: int = Field(ge=0)
    """First seed of the block."""
    stop: int
    """One past the last seed of the block."""

    @model_validator(mode="after")
    def _ordered(self) -> "SeedBlock":
        if self.stop <= self.start:
            raise ValueError(f"stop ({self.stop}) must exceed start ({self.start})")
        return self

    @property
    def size(self) -> int:
        """Number of seeds in the block."""
        return self.stop - self.start

    def overlaps(self, other: "SeedBlock") -> bool:
        """Whether the two blocks share at least one seed."""
        return self.start < other.stop and other.start < self.stop

    def seeds(self) -> range:
        """The seeds of the block, in order."""
        return range(self.start, self.stop)


class SeedBlocks(StrictModel):
    """Scenario seed blocks; the audit checks that they are pairwise disjoint."""

    training: SeedBlock
    """Seeds the training runs draw scenarios from."""
    evaluation: SeedBlock
    """The evaluation seeds: every arm meets each of them on every domain and buyer."""
    pilot: SeedBlock
    """Seeds of the pre-run pilot gate, one per domain per seed."""
    held_out_extension: SeedBlock
    """Extra held-out-domain seeds used only if the held-out doubling rule fires."""


class TrainingBuyer(StrictModel):
    """One buyer of the training pool."""

    spec: Spec
    """Agent spec string of the buyer."""
    family: Name
    """Model or strategy family, for the same-family / other-family split."""
    weight: float = Field(gt=0, le=1)
    """Share of training scenarios this buyer is attached to."""


class EvaluationBuyer(StrictModel):
    """One held-out evaluation buyer; its key in the protocol is the episode table's ``buyer``."""

    spec: Spec
    """Agent spec string of the buyer."""
    family: Name
    """Model or strategy family; compare with the training pool's families."""


class Buyers(StrictModel):
    """Training pool (mixed by weight) and the held-out evaluation buyers."""

    training: tuple[TrainingBuyer, ...] = Field(min_length=1)
    """Training pool; weights sum to 1."""
    evaluation: dict[Name, EvaluationBuyer] = Field(min_length=1)
    """Evaluation buyers keyed by the name written in the episode table's ``buyer`` column."""

    @model_validator(mode="after")
    def _pool(self) -> "Buyers":
        total = sum(b.weight for b in self.training)
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"training buyer weights sum to {total!r}, not 1")
        pool = {b.spec for b in self.training}
        leaked = sorted(name for name, b in self.evaluation.items() if b.spec in pool)
        if leaked:
            raise ValueError(f"evaluation buyers {leaked} are also in the training pool")
        return self


class SamplingSettings(StrictModel):
    """Decoding parameters sent with each request; ``null`` means not sent (provider default)."""

    temperature: float | None = Field(default=None, ge=0)
    """Sampling temperature."""
    top_p: float | None = Field(default=None, gt=0, le=1)
    """Nucleus truncation."""
    top_k: int | None = Field(default=None, gt=0)
    """Top-k truncation."""
    thinking: bool | None = None
    """Whether the model's thinking mode is enabled."""


class Sampling(StrictModel):
    """Sampling per role; training rollouts use ``self_served_seller`` too (Appendix H)."""

    self_served_seller: SamplingSettings
    """Base and trained sellers the study serves itself, in training and evaluation."""
    reference_seller: SamplingSettings
    """Reference sellers (frontier models or scripted baselines)."""
    buyer: SamplingSettings
    """Every buyer, training and evaluation."""
