"""The rollout engine (slots keeping their cache across turns) against the turn-synchronous loop."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import transformers

from negotiation.agents import Decoding
from negotiation.training.lm import default_generator, play_token_episodes, turn_generator
from negotiation.training.nemo import (
    EpisodeState, NegotiationStepLogic, derive_turn_tags, protocol_env_settings, stop_token_ids, template_kwargs, training_scenarios,
)
from tests.training.lm.tiny_lm import tiny_protocol, write_tiny_checkpoint

NEW_TOKENS = 10
SAMPLING = Decoding(temperature=1.0, top_p=0.95, top_k=40, max_tokens=NEW_TOKENS)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = write_tiny_checkpoint(tmp_path_factory.mktemp("slots") / "tiny")
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    protocol = tiny_protocol()
    tags = derive_turn_tags(tok, template_kwargs(False))
    settings = protocol_env_settings(protocol, tags)
    # An untrained model rarely samples the end-of-turn token: a ninth of the vocabulary also ends
    # a turn, so turns end at different lengths and some are cut at the cap.
    stops = list(stop_token_ids(tags, tok.eos_token_id)) + list(range(40, len(tok), 9))
    states = training_scenarios(protocol, offset=0, count=7, seed=0)
    with NegotiationStepLogic(settings) as logic:  # every other episode starts one malformed turn in: ends sooner
        step = logic.step([[{"role": "assistant", "content": "hmm"}]] * 4, [s.model_dump(mode="json") for s in states[::2]])
    states[::2] = [EpisodeState.model_validate(meta) for meta in step.metadata]
    return folder, tok, settings, stops, states


def _llama(folder, dtype):
    return transformers.AutoModelForCausalLM.from_pretrained(folder).eval().to(dtype)


def _gemma3(tok, dtype):
    config = transformers.Gemma3TextConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                           num_attention_heads=2, num_key_value_heads=1, head_dim=16,
                                           max_position_embeddings=8192, query_pre_attn_scalar=16,
                                           layer_types=["full_attention"] * 2, sliding_window=8192)
    torch.manual_seed(1)
    return transformers.Gemma3ForCausalLM(config).eval().to(dtype)


def _play(setup, generate, *, context_tokens=8192, rollout_turns=5, seeds=None):
    _, tok, settings, stops, states = setup
    seeds = seeds or [101 + 7 * i for i in range(len(states))]
    with torch.no_grad(), NegotiationStepLogic(settings) as logic:
        return play_token_episodes(states, seeds, tokenizer=tok, generate=generate, settings=settings,
                                   prompt_tokens=2048, context_tokens=context_tokens, new_tokens=NEW_TOKENS,
                                   rollout_turns=rollout_turns, stop_ids=stops, logic=logic)


def _engine(model, tok, stops, *, slots, sync_every, context_tokens=8192):
    return default_generator(model, tok, sampling=SAMPLING, stop_ids=stops, max_batch=slots,
                             cache_tokens=context_tokens, sync_every=sync_every, prefill_tokens=2048)


def _assert_same(a, b):
    assert a.ids == b.ids
    assert a.gen_mask == b.gen_mask
    assert np.array_equal(a.returns, b.returns) and np.array_equal(a.truncated, b.truncated)
    assert np.array_equal(a.gen_tokens, b.gen_tokens) and np.array_equal(a.trainable, b.trainable)


@pytest.mark.parametrize("family", ["llama", "gemma3"])
@pytest.mark.parametrize("slots,sync_every", [(7, 3), (3, 1)])  # all episodes at once; episodes waiting for a slot
def test_engine_is_token_for_token_the_turn_synchronous_loop_in_float64(setup, family, slots, sync_every):
    folder, tok, _, stops, states = setup
    model = _llama(folder, torch.float64) if family == "llama" else _gemma3(tok, torch.float64)
    prompts = [len(ids) for ids in _play(setup, lambda p, s: [[stops[0]] for _ in p], rollout_turns=1).ids]
    context = sorted(prompts)[len(prompts) // 2] + 3 * NEW_TOKENS  # some episodes hit the context cap
    for kwargs in ({}, {"context_tokens": context}, {"rollout_turns": 2}):
        reference = _play(setup, turn_generator(model, tok, sampling=SAMPLING, stop_ids=stops), **kwargs)
        engine = _engine(model, tok, stops, slots=slots, sync_every=sync_every,
                         context_tokens=kwargs.get("context_tokens", 8192))
        _assert_same(_play(setup, engine, **kwargs), reference)
        assert engine.stats.decode_steps > 0 and 0 < engine.stats.live_share <= 1
        assert 0 < engine.stats.feed_seconds and engine.stats.env_steps > 0
    # the three runs cover what the engine must get right
    full = _play(setup, turn_generator(model, tok, sampling=SAMPLING, stop_ids=stops))
    ends = [sum(m) for m in full.gen_mask]
    assert len(set(ends)) > 2  # episodes of different lengths
    played = {sum(m[k] and (k + 1 == len(m) or not m[k + 1]) for k in range(len(m))) for m in full.gen_mask}
    assert len(played) > 1 and all(e is not None for e in full.episodes)  # the environment ended them at different turns
    cut_turns = sum(ids[k] not in stops and mask[k] and not mask[k + 1] for ids, mask in zip(full.ids, full.gen_mask)
                    for k in range(len(ids) - 1))
    stopped_turns = sum(ids[k] in stops and mask[k] for ids, mask in zip(full.ids, full.gen_mask) for k in range(len(ids)))
    assert cut_turns > 0 and stopped_turns > 0
    truncated = _play(setup, turn_generator(model, tok, sampling=SAMPLING, stop_ids=stops), context_tokens=context)
    assert 0 < truncated.truncated.sum() < len(states)


def test_engine_repeats_bit_identically_in_float32(setup):
    folder, tok, _, stops, _ = setup
    model = _llama(folder, torch.float32)
    first = _play(setup, _engine(model, tok, stops, slots=4, sync_every=4))
    second = _play(setup, _engine(model, tok, stops, slots=4, sync_every=4))
    _assert_same(first, second)
    assert str(first.gen_logprobs) == str(second.gen_logprobs)  # NaNs compare equal as text


@pytest.mark.parametrize("family", ["llama", "gemma3"])
def test_sampler_logprobs_equal_a_forward_pass_of_the_final_sequences(setup, family):
    folder, tok, _, stops, _ = setup
    model = _llama(folder, torch.float64) if family == "llama" else _gemma3(tok, torch.float64)
    ep = _play(setup, _engine(model, tok, stops, slots=7, sync_every=2))
    checked = 0
    for ids, mask, lps in zip(ep.ids, ep.gen_mask, ep.gen_logprobs):
        assert len(lps) == len(ids)
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0]
        expected = torch.log_softmax(logits[:-1], dim=-1).gather(1, torch.tensor(ids[1:])[:, None]).squeeze(1)
        for k in range(1, len(ids)):
            if mask[k]:
                assert abs(lps[k] - float(expected[k - 1])) < 1e-9
                checked += 1
            else:
                assert math.isnan(lps[k])
    assert checked == int(ep.gen_tokens.sum()) > 0


def test_plain_sampler_reports_no_logprobs(setup):
    _, tok, _, stops, _ = setup
    ep = _play(setup, lambda prompts, seeds: [[50, stops[0]] for _ in prompts], rollout_turns=2)
    assert all(math.isnan(x) for row in ep.gen_logprobs for x in row)


def test_the_trainers_engine_has_one_slot_per_episode_of_a_step_whatever_the_validation_set(tmp_path):
    """A validation set larger than a GRPO step waits for free slots; the training steps do not
    decode idle rows for it (256 slots for 128 episodes halved the live share on the GPU)."""
    from negotiation.training.lm import LmArm, LmRuntime, LmTrainConfig, SlotRollout, load_seller

    base = write_tiny_checkpoint(tmp_path / "base")
    cfg = LmTrainConfig(protocol=tiny_protocol(validation_scenarios=20),
                        arm=LmArm(study="tiny", arm="slots", size="w16", base=base, lr_multiple=1.0, steps=1, seed=3),
                        runtime=LmRuntime(micro_batch_tokens=4096))
    engine = load_seller(base, cfg, None)[2]
    assert isinstance(engine, SlotRollout) and engine.decoder.slots == 6  # tiny_protocol's episodes_per_step


@pytest.mark.parametrize("asked,used", [(None, None), (0, None), (8, 8)])
def test_the_cpu_engine_prefills_each_feed_at_its_shape_unless_given_a_chunk(setup, asked, used):
    """Fixed-shape prefill chunks are CUDA's (graph replays); on the CPU the default keeps each
    feed's own shape, so CPU runs prefill as they did, and an explicit chunk is honoured."""
    folder, tok, _, stops, _ = setup
    engine = default_generator(_llama(folder, torch.float32), tok, sampling=SAMPLING, stop_ids=stops, max_batch=2,
                               cache_tokens=256, prefill_chunk=asked)
    assert engine.decoder.prefill_chunk == used
