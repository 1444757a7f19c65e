"""The fixed-shape generator (static cache, explicit mask) against the per-request reference loop."""

from __future__ import annotations

import pytest
import torch

from negotiation.lm import BatchGenerator, ContextTooLongError, GenerationRequest, StaticBatchGenerator
from tests.lm.test_generate import STOPS, VOCAB, reference, requests


def _llama():
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128,
                                      tie_word_embeddings=False)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).eval().to(torch.float64)


def _gemma3():
    """The ladder's family: Gemma3 with every layer on full attention (``negotiation.lm.model_config``)."""
    transformers = pytest.importorskip("transformers")
    config = transformers.Gemma3TextConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                           num_attention_heads=2, num_key_value_heads=1, head_dim=16,
                                           max_position_embeddings=128, query_pre_attn_scalar=16,
                                           layer_types=["full_attention"] * 2, sliding_window=128)
    torch.manual_seed(0)
    return transformers.Gemma3ForCausalLM(config).eval().to(torch.float64)


@pytest.fixture(scope="module", params=["llama", "gemma3"])
def model(request):
    return _llama() if request.param == "llama" else _gemma3()


def test_static_generation_equals_the_per_request_loop_across_calls_and_chunks(model):
    generator = StaticBatchGenerator(model, pad_token_id=0, stop_token_ids=STOPS, prefill_tokens=64, max_batch=4,
                                     cache_tokens=48, bucket_tokens=16)  # caches of 32 and 48 positions
    for seed in (0, 1):  # the second call reuses the cache, whose later positions hold the first call's rows
        batch = requests(10, seed=seed)  # 3 chunks of at most 4 rows; the last leaves 2 rows unused
        for request, result in zip(batch, generator.generate(batch)):
            expected = reference(model, request)
            assert list(result.token_ids) == expected
            assert result.finish_reason == ("stop" if expected[-1] in STOPS else "length")
            assert len(result.logprobs) == len(expected)
    assert generator.graph_error is None
    assert sorted(generator._buffers_by_length) == [32, 48]  # reused across calls and chunks


def test_cache_lengths_are_buckets_capped_by_the_context(model):
    generator = StaticBatchGenerator(model, pad_token_id=0, stop_token_ids=STOPS, cache_tokens=100, bucket_tokens=32)
    assert [generator.cache_length(n) for n in (1, 32, 33, 96, 97, 100)] == [32, 32, 64, 96, 100, 100]


def test_static_logprobs_equal_the_dynamic_generator(model):
    batch = requests(6, seed=2)
    dynamic = BatchGenerator(model, pad_token_id=0, stop_token_ids=STOPS).generate(batch)
    static = StaticBatchGenerator(model, pad_token_id=0, stop_token_ids=STOPS, max_batch=8).generate(batch)
    for a, b in zip(dynamic, static):
        assert a.token_ids == b.token_ids
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-9)


def test_a_request_that_does_not_fit_the_static_cache_is_refused_by_name(model):
    generator = StaticBatchGenerator(model, pad_token_id=0, stop_token_ids=STOPS, cache_tokens=32)
    too_long = GenerationRequest(prompt_ids=(9,) * 20, seed=0, max_new_tokens=16)
    with pytest.raises(ContextTooLongError, match="request 1: 20 prompt tokens .* static cache of 32"):
        generator.generate([requests(1)[0], too_long])
