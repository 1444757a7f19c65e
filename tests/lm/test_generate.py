"""The batched generator against a plain per-request loop (no cache, no padding, one row at a time)."""

from __future__ import annotations

import pytest
import torch
import transformers

from negotiation.lm import BatchGenerator, ContextTooLongError, GenerationRequest, sample_tokens

VOCAB = 48
STOPS = (3, 7)


@pytest.fixture(scope="module")
def model():
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128,
                                      tie_word_embeddings=False)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).eval().to(torch.float64)


def reference(model, request: GenerationRequest) -> list[int]:
    """One request alone: the whole sequence through the model at every step, no cache, no padding."""
    ids, out = list(request.prompt_ids), []
    params = dict(seeds=torch.tensor([request.seed]), temperature=torch.tensor([request.temperature]),
                  top_k=torch.tensor([request.top_k or 0]), top_p=torch.tensor([request.top_p or 1.0]))
    with torch.inference_mode():
        for step in range(request.max_new_tokens):
            logits = model(torch.tensor([ids])).logits[:, -1, :].float()
            token = int(sample_tokens(logits, step=step, **params)[0])
            out.append(token)
            ids.append(token)
            if token in STOPS:
                break
    return out


def requests(n: int, seed: int = 0) -> list[GenerationRequest]:
    rng = torch.Generator().manual_seed(seed)
    made = []
    for i in range(n):
        length = int(torch.randint(1, 20, (1,), generator=rng))
        prompt = tuple(int(t) for t in torch.randint(8, VOCAB, (length,), generator=rng))
        made.append(GenerationRequest(prompt_ids=prompt, seed=1000 + i, max_new_tokens=4 + 3 * (i % 5),
                                      temperature=(0.0, 0.7, 1.0, 1.3)[i % 4], top_p=(None, 0.9, 0.95)[i % 3],
                                      top_k=(None, 5, 64)[i % 3]))
    return made


def test_batched_generation_equals_the_per_request_loop(model):
    batch = requests(10)
    generator = BatchGenerator(model, pad_token_id=0, stop_token_ids=STOPS, prefill_tokens=64)  # 3 prefill chunks
    results = generator.generate(batch)
    for request, result in zip(batch, results):
        expected = reference(model, request)
        assert list(result.token_ids) == expected
        assert result.finish_reason == ("stop" if expected[-1] in STOPS else "length")
        assert len(result.logprobs) == len(expected) and all(lp <= 0 for lp in result.logprobs)
        assert result.prompt_tokens == len(request.prompt_ids)
    assert {r.finish_reason for r in results} == {"stop", "length"}  # both exits exercised


def test_a_request_gets_the_same_tokens_whatever_shares_its_batch(model):
    batch = requests(6, seed=1)
    generator = BatchGenerator(model, pad_token_id=0, stop_token_ids=STOPS)
    together = generator.generate(batch)
    alone = [generator.generate([r])[0] for r in batch]
    reversed_ = generator.generate(batch[::-1])[::-1]
    assert [g.token_ids for g in together] == [g.token_ids for g in alone] == [g.token_ids for g in reversed_]


def test_seeds_change_draws_and_greedy_matches_transformers(model):
    prompt = (9, 10, 11, 12)
    draws = {BatchGenerator(model, pad_token_id=0, stop_token_ids=(1,)).generate(
        [GenerationRequest(prompt_ids=prompt, seed=s, max_new_tokens=12)])[0].token_ids for s in range(5)}
    assert len(draws) > 1
    greedy = BatchGenerator(model, pad_token_id=0, stop_token_ids=(1,)).generate(
        [GenerationRequest(prompt_ids=prompt, seed=0, max_new_tokens=12, temperature=0.0)])[0]
    hf = model.generate(torch.tensor([prompt]), do_sample=False, max_new_tokens=12, eos_token_id=1, pad_token_id=0)
    assert list(greedy.token_ids) == hf[0, len(prompt):].tolist()


def test_a_prompt_longer_than_the_context_is_refused_by_name(model):
    generator = BatchGenerator(model, pad_token_id=0, stop_token_ids=STOPS)
    too_long = GenerationRequest(prompt_ids=(9,) * 120, seed=0, max_new_tokens=16)
    with pytest.raises(ContextTooLongError, match="request 1: 120 prompt tokens"):
        generator.generate([requests(1)[0], too_long])
