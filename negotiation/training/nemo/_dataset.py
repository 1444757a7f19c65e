"""Training and validation scenarios as NeMo-RL ``DatumSpec``-shaped dicts.

Scenario ``i`` of a training arm's combined run is ``(training domain i mod n, seed
training.start + i)``: every step sees each training domain equally often and no scenario
repeats across an initial run and its continuation (the continuation starts at index
``parent_step * scenarios_per_step``). Buyers are attached by the protocol's pool weights
(80/20 in both studies) with exact counts over the whole combined run, in an order drawn from
``seed``. Validation scenarios are fixed: the top of the training seed block, counted down,
disjoint from every training index.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from negotiation.env import View
from negotiation.errors import ConfigError
from negotiation.protocol import Protocol
from negotiation.training.nemo._state import TASK_NAME, EpisodeState, NemoEnvSettings, replay
from negotiation.training.nemo._turn_tags import ChatTokenizer

__all__ = [
    "PromptBuilder", "build_datums", "buyer_assignment", "load_prompt_builder", "training_scenarios",
    "validation_count", "validation_scenarios",
]

PromptBuilder = Callable[[View], Sequence[Mapping[str, str]]]
"""The seller's opening chat messages (system and user) for its turn-1 view."""

_TRAIN_STREAM, _VALIDATION_STREAM = 0, 1


def buyer_assignment(weights: Sequence[float], count: int, rng: np.random.Generator) -> list[int]:
    """Pool index per scenario: ``count * w`` of each buyer (largest remainders), shuffled by ``rng``."""
    w = np.asarray(weights, dtype=float)
    if count < 0 or w.ndim != 1 or not len(w) or (w <= 0).any() or abs(w.sum() - 1.0) > 1e-9:
        raise ValueError(f"need positive weights summing to 1 and count >= 0, got {list(weights)} and {count}")
    quotas = w * count
    counts = np.floor(quotas).astype(int)
    short = count - int(counts.sum())
    # Largest fractional part first; ties go to the earlier (heavier-listed) buyer.
    for k in sorted(range(len(w)), key=lambda j: (-(quotas[j] - counts[j]), j))[:short]:
        counts[k] += 1
    return [int(k) for k in rng.permutation(np.repeat(np.arange(len(w)), counts))]


def validation_count(protocol: Protocol) -> int:
    """Fixed validation scenarios: one step's worth, each played once per validation."""
    return protocol.training.scenarios_per_step


def _plan_size(protocol: Protocol) -> int:
    recipe, block = protocol.training, protocol.seeds.training
    total = recipe.combined_steps * recipe.scenarios_per_step
    if total + validation_count(protocol) > block.size:
        raise ConfigError(f"protocol/{protocol.study}/protocol.yaml:seeds.training: {block.size} seeds cannot hold "
                          f"{total} training and {validation_count(protocol)} validation scenarios")
    return total


def _states(protocol: Protocol, indices: Sequence[int], seeds: Sequence[int], stream: int, seed: int,
            pool_size: int) -> list[EpisodeState]:
    pool = protocol.buyers.training
    rng = np.random.default_rng([seed, protocol.seeds.training.start, stream])
    assign = buyer_assignment([b.weight for b in pool], pool_size, rng)
    domains = protocol.domains.training
    return [EpisodeState(domain=domains[i % len(domains)], seed=s, buyer=pool[assign[i]].spec, sample_seed=s)
            for i, s in zip(indices, seeds)]


def training_scenarios(protocol: Protocol, *, offset: int, count: int, seed: int) -> list[EpisodeState]:
    """Scenarios ``offset .. offset + count - 1`` of the combined run, buyers attached."""
    total = _plan_size(protocol)
    if offset < 0 or count < 0 or offset + count > total:
        raise ValueError(f"scenarios {offset}..{offset + count - 1} lie outside the combined run's 0..{total - 1}")
    indices = range(offset, offset + count)
    start = protocol.seeds.training.start
    return _states(protocol, indices, [start + i for i in indices], _TRAIN_STREAM, seed, total)


def validation_scenarios(protocol: Protocol, *, seed: int) -> list[EpisodeState]:
    """The fixed validation scenarios, from the top of the training seed block."""
    _plan_size(protocol)
    n = validation_count(protocol)
    top = protocol.seeds.training.stop - 1
    return _states(protocol, range(n), [top - j for j in range(n)], _VALIDATION_STREAM, seed, n)


def load_prompt_builder(path: str) -> PromptBuilder:
    """The ``module:function`` prompt builder, or a ``ConfigError`` naming what is missing."""
    module_name, _, name = path.partition(":")
    try:
        builder = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(f"negotiation.prompt_builder: cannot load {path!r} ({exc})") from exc
    if not callable(builder):
        raise ConfigError(f"negotiation.prompt_builder: {path!r} is not callable")
    return builder


def build_datums(states: Sequence[EpisodeState], *, tokenizer: ChatTokenizer, prompt_builder: PromptBuilder,
                 settings: NemoEnvSettings, max_prompt_tokens: int, start_index: int = 0) -> list[dict[str, Any]]:
    """One ``DatumSpec`` dict per scenario: the seller's rendered opening prompt and its state.

    A prompt over ``max_prompt_tokens`` is cut and gets ``loss_multiplier`` 0, as NeMo-RL's own
    processors treat over-long prompts.
    """
    import torch  # a core dependency, imported here so listing scenarios stays light

    if settings.turn_tags is None:
        raise ConfigError("env.negotiation:turn_tags: missing; prompts are rendered with the arm's template kwargs")
    kwargs = settings.turn_tags.template_kwargs
    datums = []
    for offset, state in enumerate(states):
        messages = [dict(m) for m in prompt_builder(replay(state, settings).view())]
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **kwargs)
        ids = list(tokenizer.encode(text, add_special_tokens=False))
        fits = len(ids) <= max_prompt_tokens
        ids = ids[:max_prompt_tokens]
        datums.append({
            "message_log": [{"role": "user", "content": text, "token_ids": torch.tensor(ids, dtype=torch.long)}],
            "length": len(ids),
            "extra_env_info": state.model_dump(mode="json"),
            "loss_multiplier": 1.0 if fits else 0.0,
            "idx": start_index + offset,
            "task_name": TASK_NAME,
        })
    return datums
