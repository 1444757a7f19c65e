"""Protocol sections about evaluation: read rule, design, statistics, guards, pilot gate, doubling."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from negotiation.protocol._files import StrictModel
from negotiation.protocol._schema_env import SeedBlock

__all__ = [
    "Contrast", "DealRateGuard", "Evaluation", "EvaluationProfile", "EvaluationSeeds", "Guards", "HandReadGuard",
    "HeldOutDoubling", "MonteCarloRule", "ParseRateGuard", "PilotGate", "ReadRule", "Statistics", "TurnsGuard",
]


class ReadRule(StrictModel):
    """Which checkpoint of a run an arm is evaluated at ("read")."""

    matching: Literal["combined_steps"]
    """Arms are matched on combined optimizer steps (parent steps up to the branch plus own steps)."""
    fallback: Literal["nearest_earlier"]
    """When the rule's step was not saved, read the nearest earlier saved step instead."""
    substitution_requires_deviation: bool
    """Whether a fallback read must be covered by a logged deviation."""
    continuation_branch: Literal["parent_final_checkpoint"]
    """A continuation starts from its parent's last saved step at or before ``initial_steps``."""


class Evaluation(StrictModel):
    """The paired evaluation design: every arm meets the identical scenario x buyer set."""

    seeds_per_domain: int = Field(gt=0)
    """Evaluation seeds per domain; equals the size of ``seeds.evaluation``."""
    episodes_per_arm: int = Field(gt=0)
    """seeds_per_domain * evaluated domains * evaluation buyers."""
    held_out_episodes_per_arm: int = Field(gt=0)
    """The part of ``episodes_per_arm`` on held-out domains."""
    pairing_key: tuple[str, ...]
    """Columns that pair episodes across arms."""
    max_error_rows: int = Field(ge=0)
    """Error rows allowed in final results (failed episodes are re-run, never dropped)."""


class Contrast(StrictModel):
    """A paired difference ``arm - reference`` over the pooled evaluation set."""

    arm: str
    """Arm whose score is the minuend."""
    reference: str
    """Arm subtracted from it."""


class MonteCarloRule(StrictModel):
    """When a bootstrap endpoint is too close to zero to trust at the default resample count."""

    band: float = Field(gt=0)
    """Monte Carlo error of an interval endpoint at ``statistics.resamples``."""
    rerun_resamples: int = Field(gt=0)
    """Resamples of the re-run for a contrast whose bound lies within ``band`` of zero."""


class Statistics(StrictModel):
    """Inference on paired differences."""

    score: Literal["S"]
    """Primary score: the outcome term of Eq. 1."""
    resamples: int = Field(gt=0)
    """Bootstrap resamples."""
    cluster: Literal["seed"]
    """Resampling unit: a seed carries all its domains and both buyers."""
    interval: Literal["percentile"]
    """Bootstrap interval method."""
    confidence: float = Field(gt=0, lt=1)
    """Interval coverage."""
    alpha: float = Field(gt=0, lt=1)
    """Family-wise error rate of the primary family."""
    p_values: Literal["bootstrap"]
    """How p-values are computed (from the same resampling)."""
    correction: Literal["holm"]
    """Multiple-comparison correction of the primary family."""
    primary_family: tuple[Contrast, ...] = Field(min_length=1)
    """The prespecified contrasts; every other contrast is reported as exploratory."""
    non_primary_label: Literal["exploratory"]
    """Label every non-primary contrast carries in tables."""
    monte_carlo: MonteCarloRule
    """The Monte Carlo re-run rule."""


class DealRateGuard(StrictModel):
    """Deal rate must hold while deal-only utility rises (vs the same-size base)."""

    max_drop: float | None = Field(default=None, ge=0)
    """Largest allowed fall in deal rate, absolute (null: the source gives none; the study's
    ``registry/<study>/guards.yaml`` supplies this project's)."""


class ParseRateGuard(StrictModel):
    """The seller's bad-parse fraction must stay flat (vs the same-size base)."""

    max_increase: float | None = Field(default=None, ge=0)
    """Largest allowed rise in the seller-turn bad-parse fraction, absolute (null: given by the registry)."""


class TurnsGuard(StrictModel):
    """Mean turns must not saturate at the cap."""

    max_fraction_of_cap: float | None = Field(default=None, gt=0, le=1)
    """Mean turns must stay below this fraction of the turn cap (2 T) (null: given by the registry)."""
    max_increase_over_base: float | None = Field(default=None, ge=0)
    """Largest allowed rise in mean turns over the same-size base (null: given by the registry)."""


class HandReadGuard(StrictModel):
    """Transcripts of every trained arm read by hand before its results count."""

    transcripts_per_domain_family: int = Field(gt=0)
    """Transcripts read per trained arm per domain family (training, held out)."""
    blocking: bool
    """Whether an arm without a sign-off fails the audit (else it is shown as pending)."""


class Guards(StrictModel):
    """The four prespecified anti-Goodhart guards; a threshold the source does not state is null here
    and given by ``registry/<study>/guards.yaml`` (``negotiation.study.resolve_guards``)."""

    deal_rate: DealRateGuard
    """Guard 1."""
    parse_rate: ParseRateGuard
    """Guard 2."""
    turns: TurnsGuard
    """Guard 3."""
    hand_read: HandReadGuard
    """Guard 4."""


class PilotGate(StrictModel):
    """A short pilot per (arm, buyer) cell before the cell is evaluated."""

    seeds_per_domain: int = Field(gt=0)
    """Pilot seeds per domain, from ``seeds.pilot``."""
    episodes_per_cell: int = Field(gt=0)
    """Pilot episodes per (arm, evaluation buyer) cell: seeds_per_domain * evaluated domains."""
    counted_turns: Literal["seller", "all"]
    """Whose turns count as bad parses."""
    max_bad_parses: int = Field(ge=0)
    """Bad parses a cell may show and still pass."""


class HeldOutDoubling(StrictModel):
    """The one prespecified adaptive step (Appendix C)."""

    trigger_size: str
    """Size whose held-out gain interval is tested (the largest trained model)."""
    trigger: Literal["interval_straddles_zero"]
    """Condition that fires the rule."""
    factor: int = Field(gt=1)
    """Multiplier of the held-out domain's episodes."""
    applies_to: Literal["frozen_arms_and_all_buyers"]
    """Once fired it is applied at once to every frozen arm and both buyers."""
    retake: bool
    """Whether the rule may be taken again after it was applied."""


class EvaluationSeeds(StrictModel):
    """The seed blocks an evaluation profile replaces (``seeds.evaluation``, ``seeds.held_out_extension``)."""

    evaluation: SeedBlock
    """The profile's evaluation seeds: every arm of its results meets each on every domain and buyer."""
    held_out_extension: SeedBlock
    """The profile's extra held-out-domain seeds, used only if its doubling rule fires."""


class EvaluationProfile(StrictModel):
    """A hardware profile's own evaluation design (the ``lm`` ladder's GPU profile: more seed clusters
    than two CPU cores can evaluate). ``Protocol.for_profile`` puts these sections in place of the
    protocol's own for that profile's results; every other section is shared."""

    seeds: EvaluationSeeds
    """Replaces ``seeds.evaluation`` and ``seeds.held_out_extension``."""
    evaluation: Evaluation
    """Replaces ``evaluation``."""
    guards: Guards
    """Replaces ``guards`` (an allowance that a correct arm trips by chance depends on the design)."""
    held_out_doubling: HeldOutDoubling
    """Replaces ``held_out_doubling`` (its trigger is the profile's largest trained size)."""
