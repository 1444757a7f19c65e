"""Language-model sellers built here from scratch: tokenizer, model, chat turn tags, the
imitation (SFT) loop, batched generation with a KV cache and seeded sampling.

No pretrained weights can be downloaded, so the ``lm`` study (``protocol/lm/``) trains its own
byte-level BPE tokenizer on the project's dialogues, builds causal LMs of the protocol's sizes
from a seed and warm-starts them by imitation of scripted sellers; every base is a Hugging Face
folder that ``hf:`` and ``vllm:`` sellers load. This package sits below ``negotiation.agents``
(the ``hf:`` seller runs its generator); the corpus the scripted agents play and the two build
steps that read it (``write_tokenizer``, ``write_base``) live one layer up, in
``negotiation.ladder``. Importing this package imports neither torch (the generator's names
load on first use) nor transformers (imported by the functions that use it). See ``docs/lm.md``.
"""

from typing import Any

from negotiation._lazy import lazy_attribute
from negotiation.lm._model import build_model, count_parameters, model_config, save_checkpoint
from negotiation.lm._sft import Chat, SftResult, encode_examples, train_sft
from negotiation.lm._sft_resume import SFT_RESUME_FILE
from negotiation.lm._tokenizer import (
    BOS, CHAT_TEMPLATE, END_OF_TURN, EOS, PAD, SPECIAL_TOKENS, START_OF_TURN, load_tokenizer, train_tokenizer,
)
from negotiation.lm._turn_tags import (
    DEFAULT_HISTORY, THINKING_TEMPLATE_VAR, ChatTokenizer, TurnTagError, TurnTags, check_round_trip,
    derive_turn_tags, encode_chat, template_kwargs,
)

__all__ = [
    "BOS", "CHAT_TEMPLATE", "DEFAULT_HISTORY", "END_OF_TURN", "EOS", "PAD", "SFT_RESUME_FILE", "SPECIAL_TOKENS",
    "START_OF_TURN", "THINKING_TEMPLATE_VAR",
    "BatchGenerator", "Chat", "ChatTokenizer", "ContextTooLongError", "Generation", "GenerationQueue",
    "GenerationRequest", "SftResult", "SlotDecoder", "StaticBatchGenerator", "TurnEnd",
    "TurnTagError", "TurnTags", "build_model", "check_round_trip", "count_parameters",
    "derive_turn_tags", "encode_chat", "encode_examples", "gumbel_noise", "load_tokenizer", "model_config",
    "sample_tokens", "save_checkpoint", "sdpa_without_cudnn", "slot_cache", "template_kwargs", "train_sft",
    "train_tokenizer", "truncation_mask",
]

# Batched generation needs torch: its names load on first use, so importing the package stays light.
_GENERATION = {"BatchGenerator": "_generate", "ContextTooLongError": "_generate", "Generation": "_generate",
               "GenerationRequest": "_generate", "GenerationQueue": "_queue", "StaticBatchGenerator": "_static",
               "sdpa_without_cudnn": "_slot_attention", "slot_cache": "_slot_cache", "SlotDecoder": "_slots",
               "TurnEnd": "_slots", "gumbel_noise": "_sampling", "sample_tokens": "_sampling",
               "truncation_mask": "_sampling"}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _GENERATION, name)
