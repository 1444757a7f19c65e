"""Training and validation scenarios as NeMo-RL ``DatumSpec``-shaped dicts.

The scenario lists are the demo trainer's (``negotiation.training.training_items`` and
``validation_items``), so both backends train on the same data: item ``i`` of a run's combined
data is a (training domain, training seed) pair in a seeded permutation with its buyer drawn from
the protocol's pool mixture (80/20), and a continuation starts at item
``parent_step * scenarios_per_step``. The validation set is fixed per study, from the top of the
training seed block, which training never draws from.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping, Sequence

from negotiation.env import View
from negotiation.errors import ConfigError
from negotiation.protocol import Protocol
from negotiation.training import TrainItem, training_data, training_items, validation_items
from negotiation.training.nemo._state import TASK_NAME, EpisodeState, NemoEnvSettings, replay
from negotiation.lm import ChatTokenizer

__all__ = [
    "PromptBuilder", "build_datums", "load_prompt_builder", "training_scenarios", "validation_count",
    "validation_scenarios",
]

PromptBuilder = Callable[[View], Sequence[Mapping[str, str]]]
"""The seller's opening chat messages (system and user) for its turn-1 view."""


def _state(item: TrainItem) -> EpisodeState:
    # Rollouts of one group share the datum, hence the sample seed; they differ by the seller's
    # sampling (and an LLM buyer's), as in NeMo-RL's own repeated prompts.
    return EpisodeState(domain=item.domain, seed=item.seed, buyer=item.buyer, sample_seed=item.seed)


def training_scenarios(protocol: Protocol, *, offset: int, count: int, seed: int) -> list[EpisodeState]:
    """Items ``offset .. offset + count - 1`` of the run's training data (dataset seed ``seed``)."""
    return [_state(item) for item in training_items(training_data(protocol), seed, offset, count)]


def validation_scenarios(protocol: Protocol) -> list[EpisodeState]:
    """The study's fixed validation scenarios."""
    return [_state(item) for item in validation_items(training_data(protocol))]


def validation_count(protocol: Protocol) -> int:
    """How many validation scenarios a validation pass plays (each once)."""
    return len(validation_items(training_data(protocol)))


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
