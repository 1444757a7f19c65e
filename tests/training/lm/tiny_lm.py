"""A tiny Hugging Face causal LM with a Gemma-4-style chat template, and a canned sampler.

The model is a 2-layer Llama of width 32 over the test BPE of ``tests/training/nemo``; the
sampler picks one of a few seller turns per request from the request's seed (an ACCEPT, an
empty COUNTER, a malformed turn), so rewards differ within a group while the model is untrained.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from negotiation.study import load_study
from tests.training.nemo.chat_fixtures import E_SERIES_TEMPLATE, _bpe

CANNED_TURNS = (
    'We have a deal. {"action": "ACCEPT"}',
    'Let us keep talking. {"action": "COUNTER", "terms": []}',
    "I am not sure what to say here",
)


def write_tiny_checkpoint(folder: Path, seed: int = 0) -> Path:
    import torch
    import transformers

    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=_bpe(), bos_token="<bos>", eos_token="<eos>",
                                               pad_token="<pad>")
    tok.chat_template = E_SERIES_TEMPLATE
    config = transformers.LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=8192, tie_word_embeddings=True,
                                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                                      pad_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return Path(folder)


def canned_generator(model: Any, tokenizer: Any, *, sampling: Any, stop_ids: Sequence[int]):
    def generate(prompts: Sequence[Sequence[int]], seeds: Sequence[int]) -> list[list[int]]:
        out = []
        for seed in seeds:
            text = CANNED_TURNS[int(np.random.default_rng(seed).integers(len(CANNED_TURNS)))]
            out.append(list(tokenizer.encode(text, add_special_tokens=False)) + [int(stop_ids[0])])
        return out
    return generate


def tiny_protocol(**training):
    """The demo protocol with a token recipe small enough for seconds on two cores."""
    protocol = load_study("demo").protocol
    values = dict(group_size=3, scenarios_per_step=2, episodes_per_step=6, initial_steps=2, combined_steps=4,
                  learning_rate=1e-3, lr_floor=1e-4, warmup_steps=1, validation_scenarios=2,
                  validation_every=2, checkpoint_every=2, rollout_turns=5, reward_plumbing="front_loaded_floor",
                  sequences=protocol.training.sequences or _sequences())
    env = protocol.environment.model_copy(update={"max_rounds": 4})
    return protocol.model_copy(update={"training": protocol.training.model_copy(update={**values, **training}),
                                       "environment": env})


def _sequences():
    from negotiation.protocol._schema_recipe import Sequences

    return Sequences(context_tokens=4096, prompt_tokens=2048, new_tokens_per_turn=32)
