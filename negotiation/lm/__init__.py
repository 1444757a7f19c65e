"""Small causal language models: batched generation with a KV cache and seeded sampling."""

from negotiation.lm._generate import BatchGenerator, ContextTooLongError, Generation, GenerationRequest
from negotiation.lm._sampling import gumbel_noise, sample_tokens, truncation_mask

__all__ = [
    "BatchGenerator", "ContextTooLongError", "Generation", "GenerationRequest", "gumbel_noise", "sample_tokens",
    "truncation_mask",
]
