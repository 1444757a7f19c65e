"""Language-model sellers built here from scratch: tokenizer, model ladder, chat turn tags,
batched generation with a KV cache and seeded sampling.

No pretrained weights can be downloaded, so the ``lm`` study (``protocol/lm/``) trains its own
byte-level BPE tokenizer on the project's dialogues, builds causal LMs of the protocol's sizes
from a seed and warm-starts them by imitation of scripted sellers; every base is a Hugging Face
folder that ``hf:`` and ``vllm:`` sellers load. Importing this package imports torch (the
generator) but not transformers (imported by the functions that use it). See ``docs/lm.md``.
"""

from negotiation.lm._corpus import Chat, corpus_seeds, seller_chats, tokenizer_texts
from negotiation.lm._ladder import TOKENIZER_RECORD, WARM_START_RECORD, ladder_tags, lm_size, write_base, write_tokenizer
from negotiation.lm._model import build_model, count_parameters, model_config, save_checkpoint
from negotiation.lm._tokenizer import (
    BOS, CHAT_TEMPLATE, END_OF_TURN, EOS, PAD, SPECIAL_TOKENS, START_OF_TURN, load_tokenizer, train_tokenizer,
)
from negotiation.lm._turn_tags import (
    DEFAULT_HISTORY, THINKING_TEMPLATE_VAR, ChatTokenizer, TurnTagError, TurnTags, check_round_trip,
    derive_turn_tags, encode_chat, template_kwargs,
)

__all__ = [
    "BOS", "CHAT_TEMPLATE", "DEFAULT_HISTORY", "END_OF_TURN", "EOS", "PAD", "SPECIAL_TOKENS", "START_OF_TURN",
    "THINKING_TEMPLATE_VAR", "TOKENIZER_RECORD", "WARM_START_RECORD",
    "BatchGenerator", "Chat", "ChatTokenizer", "ContextTooLongError", "Generation", "GenerationQueue",
    "GenerationRequest", "StaticBatchGenerator",
    "TurnTagError", "TurnTags", "build_model", "check_round_trip", "corpus_seeds", "count_parameters",
    "derive_turn_tags", "encode_chat", "gumbel_noise", "ladder_tags", "lm_size", "load_tokenizer", "model_config",
    "sample_tokens", "save_checkpoint", "seller_chats", "template_kwargs", "tokenizer_texts", "train_tokenizer",
    "truncation_mask", "write_base", "write_tokenizer",
]

# Batched generation needs torch: its names load on first use, so importing the package stays light.
_GENERATION = {"BatchGenerator": "_generate", "ContextTooLongError": "_generate", "Generation": "_generate",
               "GenerationRequest": "_generate", "GenerationQueue": "_queue", "StaticBatchGenerator": "_static", "gumbel_noise": "_sampling",
               "sample_tokens": "_sampling", "truncation_mask": "_sampling"}


def __getattr__(name: str):
    if name in _GENERATION:
        import importlib

        return getattr(importlib.import_module(f"negotiation.lm.{_GENERATION[name]}"), name)
    raise AttributeError(f"module 'negotiation.lm' has no attribute {name!r}")
