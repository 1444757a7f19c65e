"""``protocol/<study>/protocol.yaml``: the whole frozen protocol of one study."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from negotiation.errors import ConfigError
from negotiation.protocol._files import StrictModel
from negotiation.protocol._schema_env import Buyers, Domains, Environment, Sampling, SeedBlocks
from negotiation.protocol._schema_eval import (
    Evaluation,
    EvaluationProfile,
    Guards,
    HeldOutDoubling,
    PilotGate,
    ReadRule,
    Statistics,
)
from negotiation.protocol._schema_lm import LmTokenizer, WarmStart
from negotiation.protocol._schema_recipe import PolicyWarmStart, Recipe, Size

__all__ = ["PROFILES", "Protocol", "check_profile"]

PROFILES = ("cpu", "gpu")
"""Hardware profiles a study's sizes run in (``sizes.<size>.profile``); ``cpu`` is every study's."""


def check_profile(profile: str) -> str:
    """``profile`` when it is one of ``PROFILES``; else a ``ConfigError`` naming the known ones."""
    if profile not in PROFILES:
        raise ConfigError(f"--profile:{profile}: not a profile; known: {list(PROFILES)}")
    return profile


_PROFILE_KEYS = ("seeds.evaluation", "seeds.held_out_extension", "evaluation", "guards", "held_out_doubling")
"""Protocol keys an ``EvaluationProfile`` replaces; it spells each the same way under ``gpu_evaluation``."""


class Protocol(StrictModel):
    """Everything fixed before any arm runs. Numbers live here once; code reads them."""

    version: Literal[1]
    """File format version."""
    study: str
    """Study name; equals the folder name under ``protocol/``."""
    title: str
    """Human title of the study."""
    source: str
    """Where the numbers come from (e.g. the paper's sections), for the reader."""
    environment: Environment
    """Game and reward constants."""
    domains: Domains
    """Training and held-out domains."""
    seeds: SeedBlocks
    """Scenario seed blocks."""
    buyers: Buyers
    """Training pool and evaluation buyers."""
    sampling: Sampling
    """Decoding settings per role."""
    sizes: dict[str, Size] = Field(min_length=1)
    """Seller sizes keyed by name, with per-size settings."""
    training: Recipe
    """The training recipe."""
    gpu_training: Recipe | None = None
    """The recipe of sizes whose ``profile`` is ``gpu`` (a language-model ladder's GPU profile, e.g.
    the paper's 16 x 8 batch); the read rule reads a GPU-profile arm on this recipe's steps and
    read points. ``None``: every size trains with ``training``."""
    read_rule: ReadRule
    """How the evaluated checkpoint of a trained arm is chosen."""
    evaluation: Evaluation
    """The paired evaluation design (of the CPU profile, and of the GPU profile without
    ``gpu_evaluation``)."""
    gpu_evaluation: EvaluationProfile | None = None
    """The GPU profile's own evaluation seeds, design, guards and doubling rule: its results (e.g.
    ``outputs/lm-gpu``) are read against ``for_profile("gpu")``. ``None``: the protocol's own."""
    statistics: Statistics
    """Inference and the primary family."""
    guards: Guards
    """The four prespecified guards."""
    pilot_gate: PilotGate
    """The pre-run pilot gate."""
    held_out_doubling: HeldOutDoubling
    """The held-out doubling rule."""
    tokenizer: LmTokenizer | None = None
    """The language-model ladder's tokenizer (``lm`` sizes only)."""
    warm_start: WarmStart | None = None
    """The ladder's imitation warm start (``lm`` sizes only)."""
    policy_warm_start: PolicyWarmStart | None = None
    """The imitation warm start of ``policy`` sizes (their base); ``None``: a policy size's base is
    its untrained init."""

    def for_profile(self, profile: str) -> Protocol:
        """The protocol a ``profile``'s results are read against: with ``gpu_evaluation``'s sections
        in place of the shared ones for ``gpu``, else this protocol itself."""
        design = self.gpu_evaluation if check_profile(profile) == "gpu" else None
        if design is None:
            return self
        seeds = self.seeds.model_copy(update={"evaluation": design.seeds.evaluation,
                                              "held_out_extension": design.seeds.held_out_extension})
        return self.model_copy(update={"seeds": seeds, "evaluation": design.evaluation, "guards": design.guards,
                                       "held_out_doubling": design.held_out_doubling})

    def key_for(self, profile: str, key: str) -> str:
        """The file's key that holds what ``profile`` reads as ``key``: for ``gpu``, under
        ``gpu_evaluation`` where it replaces the key (``evaluation.x`` -> ``gpu_evaluation.evaluation.x``)
        and ``gpu_training`` for ``training`` (its sizes' recipe, ``recipe_for``); else ``key``. What
        a GPU stage lists as its params, and what a problem names."""
        if profile != "gpu":
            return key
        if (key == "training" or key.startswith("training.")) and self.gpu_training is not None:
            return f"gpu_{key}"
        replaced = any(key == k or key.startswith(k + ".") for k in _PROFILE_KEYS)
        return f"gpu_evaluation.{key}" if self.gpu_evaluation is not None and replaced else key

    def design_problems(self) -> list[tuple[str, str]]:
        """``(key, reason)`` for every count that does not add up (the loader reports them), the
        GPU profile's own design included (its keys under ``gpu_evaluation``)."""
        problems = self._counts_problems()
        if self.gpu_evaluation is not None:
            problems += [(self.key_for("gpu", key), reason) for key, reason in self.for_profile("gpu")._counts_problems()
                         if self.key_for("gpu", key) != key]
        return problems

    def _counts_problems(self) -> list[tuple[str, str]]:
        seeds, ev, pilot = self.seeds, self.evaluation, self.pilot_gate
        n_domains, n_buyers = len(self.domains.evaluated), len(self.buyers.evaluation)
        n_held_out, factor = len(self.domains.held_out), self.held_out_doubling.factor
        checks = [
            ("evaluation.seeds_per_domain", ev.seeds_per_domain, seeds.evaluation.size,
             "the size of seeds.evaluation"),
            ("evaluation.episodes_per_arm", ev.episodes_per_arm, ev.seeds_per_domain * n_domains * n_buyers,
             f"seeds_per_domain * {n_domains} domains * {n_buyers} buyers"),
            ("evaluation.held_out_episodes_per_arm", ev.held_out_episodes_per_arm,
             ev.seeds_per_domain * n_held_out * n_buyers,
             f"seeds_per_domain * {n_held_out} held-out domains * {n_buyers} buyers"),
            ("pilot_gate.seeds_per_domain", pilot.seeds_per_domain, seeds.pilot.size,
             "the size of seeds.pilot"),
            ("pilot_gate.episodes_per_cell", pilot.episodes_per_cell, pilot.seeds_per_domain * n_domains,
             f"pilot seeds_per_domain * {n_domains} domains"),
            ("seeds.held_out_extension", seeds.held_out_extension.size, (factor - 1) * ev.seeds_per_domain,
             f"(held_out_doubling.factor - 1) * seeds_per_domain seeds"),
        ]
        problems = [
            (key, f"{got} != {want} ({why})") for key, got, want, why in checks if got != want
        ]
        problems += self._buyer_split_problems()
        if self.held_out_doubling.trigger_size not in self.sizes:
            problems.append((
                "held_out_doubling.trigger_size",
                f"{self.held_out_doubling.trigger_size!r} is not one of sizes {sorted(self.sizes)}",
            ))
        return problems + self._lm_problems()

    def _buyer_families(self) -> tuple[list[str], list[str]]:
        """Evaluation buyers of a family the seller trained against, and of the other families."""
        trained = {buyer.family for buyer in self.buyers.training}
        same = [name for name, buyer in self.buyers.evaluation.items() if buyer.family in trained]
        return same, [name for name in self.buyers.evaluation if name not in same]

    def buyer_split(self) -> tuple[str, str] | None:
        """``(same-family buyer, other-family buyer)``: the buyer split every metric and contrast
        compares (the gain against the trained family minus the gain against another); ``None``
        when the evaluation panel lacks one side. More than one buyer on a side is refused by
        ``design_problems``, never silently dropped."""
        same, other = self._buyer_families()
        return (same[0], other[0]) if len(same) == 1 and len(other) == 1 else None

    def _buyer_split_problems(self) -> list[tuple[str, str]]:
        same, other = self._buyer_families()
        if len(same) <= 1 and len(other) <= 1:
            return []
        return [("buyers.evaluation", f"the buyer split compares one evaluation buyer of a training family with "
                                      f"one of another family; got {sorted(same)} and {sorted(other)}")]

    def _lm_problems(self) -> list[tuple[str, str]]:
        """The ladder's sections exist exactly when an ``lm`` size does, a policy warm start only
        with policy sizes, and their corpus seeds fit the training block."""
        lm_sizes = sorted(k for k, v in self.sizes.items() if v.kind == "lm")
        problems = [(key, f"required by the lm sizes {lm_sizes}") for key in ("tokenizer", "warm_start")
                    if lm_sizes and getattr(self, key) is None]
        problems += [(key, "only lm sizes use it; no size has kind lm") for key in ("tokenizer", "warm_start")
                     if not lm_sizes and getattr(self, key) is not None]
        if self.policy_warm_start is not None:
            if not any(v.kind == "policy" for v in self.sizes.values()):
                problems.append(("policy_warm_start", "only policy sizes use it; no size has kind policy"))
            if self.policy_warm_start.seeds_per_domain > self.seeds.training.size:
                problems.append(("policy_warm_start.seeds_per_domain", f"{self.policy_warm_start.seeds_per_domain} "
                                 f"exceeds seeds.training ({self.seeds.training.size})"))
        if self.warm_start is not None:
            corpus = self.warm_start.corpus
            used = corpus.train_seeds_per_domain + corpus.validation_seeds_per_domain
            if used > self.seeds.training.size:
                problems.append(("warm_start.corpus", f"train + validation seeds per domain ({used}) exceed "
                                 f"seeds.training ({self.seeds.training.size}), so they would overlap"))
        return problems

    def recipe_key_for(self, size: str | None) -> str:
        """The section ``recipe_for(size)`` is: ``gpu_training`` or ``training`` (what messages name)."""
        return "gpu_training" if self.recipe_for(size) is self.gpu_training else "training"

    def recipe_for(self, size: str | None) -> Recipe:
        """The recipe ``size`` trains with: ``gpu_training`` for a GPU-profile size, else ``training``
        (also for no size, a reference seller's, and a size the protocol does not define, which
        the arm checks report)."""
        spec = self.sizes.get(size) if size is not None else None
        if self.gpu_training is not None and getattr(spec, "profile", "cpu") == "gpu":
            return self.gpu_training
        return self.training

    def seed_overlaps(self) -> list[tuple[str, str]]:
        """Pairs of seed-block keys that share seeds (must be empty)."""
        blocks = list(self.seeds)
        return [
            (name_a, name_b)
            for i, (name_a, block_a) in enumerate(blocks)
            for name_b, block_b in blocks[i + 1:]
            if block_a.overlaps(block_b)
        ]
