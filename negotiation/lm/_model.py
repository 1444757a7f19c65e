"""The ladder's models: a causal LM of a protocol size, initialised from a seed, saved in HF format.

A size (``negotiation.protocol``'s ``LmSize``: family, width, depth, heads, MLP width, context)
becomes a transformers config with the shared tokenizer's vocabulary and special-token ids;
the weights are transformers' own initialisation drawn under ``torch.manual_seed(init_seed)``
inside a forked RNG (the caller's generator is left as it was). ``save_checkpoint`` writes the
folder every serving stack loads: ``config.json``, ``model.safetensors``,
``generation_config.json`` and the tokenizer files. Same size and seed give byte-identical files.

``gemma3`` uses ``Gemma3ForCausalLM`` with every layer on full attention (at these context
lengths a sliding window would change nothing but the kernels vLLM has to provide) and
``query_pre_attn_scalar = head_dim``; ``llama`` uses ``LlamaForCausalLM``. Input and output
embeddings are tied in both, as in Gemma.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from negotiation.errors import ConfigError
from negotiation.lm._tokenizer import EOS, PAD

__all__ = ["build_model", "count_parameters", "model_config", "save_checkpoint"]

WEIGHTS_FILE = "model.safetensors"


def _ids(tokenizer: Any) -> dict[str, Any]:
    eot = tokenizer.eos_token_id
    return {"bos_token_id": tokenizer.bos_token_id, "pad_token_id": tokenizer.convert_tokens_to_ids(PAD),
            "eos_token_id": [eot, tokenizer.convert_tokens_to_ids(EOS)]}


def model_config(size: Any, tokenizer: Any, vocab_size: int | None = None) -> Any:
    """The transformers config of ``size`` (an ``LmSize``) for ``tokenizer``'s special ids.

    ``vocab_size`` (the protocol's ``tokenizer.vocab_size``; default: the tokenizer's length) may
    exceed what BPE learned on a small corpus: the embedding keeps the protocol's shape and the
    unused rows are never fed (imitation drives their logits down).
    """
    vocab = len(tokenizer) if vocab_size is None else int(vocab_size)
    if vocab < len(tokenizer):
        raise ConfigError(f"tokenizer.vocab_size: {vocab} is below the tokenizer's {len(tokenizer)} tokens")
    common = dict(vocab_size=vocab, hidden_size=size.hidden_size, intermediate_size=size.intermediate_size,
                  num_hidden_layers=size.num_layers, num_attention_heads=size.num_heads,
                  num_key_value_heads=size.num_kv_heads, head_dim=size.head_dim,
                  max_position_embeddings=size.context_tokens, tie_word_embeddings=True, **_ids(tokenizer))
    if size.family == "gemma3":
        from transformers import Gemma3TextConfig

        config = Gemma3TextConfig(query_pre_attn_scalar=size.head_dim, sliding_window=size.context_tokens,
                                  layer_types=["full_attention"] * size.num_layers, **common)
        config.architectures = ["Gemma3ForCausalLM"]
        return config
    from transformers import LlamaConfig

    config = LlamaConfig(**common)
    config.architectures = ["LlamaForCausalLM"]
    return config


def build_model(size: Any, tokenizer: Any, *, vocab_size: int | None = None, seed: int | None = None) -> Any:
    """A freshly initialised causal LM of ``size`` (float32, eval mode), weights drawn from
    ``seed`` (default: the size's ``init_seed``)."""
    import torch
    from transformers import AutoModelForCausalLM

    config = model_config(size, tokenizer, vocab_size)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(size.init_seed if seed is None else seed)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    return model.eval()


def count_parameters(model: Any) -> int:
    """Stored parameters (tied embeddings counted once)."""
    return sum(p.numel() for p in model.parameters())


def _generation_config(model: Any) -> Any:
    from transformers import GenerationConfig

    c = model.config
    # Stop ids only: sampling is the protocol's, sent with every request.
    return GenerationConfig(bos_token_id=c.bos_token_id, eos_token_id=c.eos_token_id, pad_token_id=c.pad_token_id)


def save_checkpoint(model: Any, tokenizer: Any, folder: str | Path) -> Path:
    """Write ``model`` and ``tokenizer`` to ``folder`` in Hugging Face format (safetensors)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.generation_config = _generation_config(model)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    if not (folder / WEIGHTS_FILE).is_file():
        raise RuntimeError(f"{folder}: save_pretrained wrote no {WEIGHTS_FILE}")
    return folder
