"""The slot decoder (per-row cache positions, continuous batching) against the per-request loop."""

from __future__ import annotations

import pytest
import torch

from negotiation.lm import GenerationRequest, SlotDecoder
from tests.lm.test_generate import STOPS, VOCAB, reference
from tests.lm.test_static import _gemma3, _llama


@pytest.fixture(scope="module", params=["llama", "gemma3"])
def model(request):
    return _llama() if request.param == "llama" else _gemma3()


def _turn(model, history: list[int], seed: int, cap: int) -> list[int]:
    request = GenerationRequest(prompt_ids=tuple(history), seed=seed, max_new_tokens=cap, temperature=1.0,
                                top_k=5, top_p=0.9)
    return reference(model, request)


@pytest.mark.parametrize("window_block", [4, 256])  # attention windows that grow with the sequences; the whole cache
@pytest.mark.parametrize("prefill_chunk", [None, 4])  # each feed at its shape; fixed [3, 4] chunks (CUDA's graphs)
def test_slots_keep_their_cache_across_turns_and_match_the_per_request_loop(model, window_block, prefill_chunk):
    _play_three_turns(model, window_block=window_block, prefill_chunk=prefill_chunk)


def test_fixed_shape_prefill_chunks_padded_with_other_slots_leave_those_slots_untouched(model):
    """Ten slots in a bucket of 8 rows: a turn's few fed slots are padded with slots that are
    decoding at that moment (their rows only write to the trash position, their logits kept),
    and every slot still draws the per-request loop's tokens, turn after turn."""
    cap, slots = 5, 10
    decoder = SlotDecoder(model, slots=slots, cache_tokens=120, stop_token_ids=STOPS, max_new_tokens=cap,
                          temperature=1.0, top_k=5, top_p=0.9, prefill_chunk=3, window_block=8)
    assert decoder.row_buckets == [8, 10]
    rng = torch.Generator().manual_seed(1)
    histories = [[int(t) for t in torch.randint(8, VOCAB, (2 + 3 * s,), generator=rng)] for s in range(slots)]
    decoder.feed(list(range(slots)), histories, list(range(slots)))  # the bucket of every slot: row b is slot b
    turns = [0] * slots
    decoding = set(range(slots))
    while decoding:
        decoder.run(1)  # few turns end per sync: feeds of 1-3 slots padded to 8 rows
        ended = decoder.collect(decoding)
        for end in ended:
            s = end.slot
            assert end.token_ids == _turn(model, histories[s], 100 * turns[s] + s, cap)
            histories[s] += end.token_ids
            turns[s] += 1
            decoding.discard(s)
        going = [e.slot for e in ended if turns[e.slot] < 3]
        news = [[int(t) for t in torch.randint(8, VOCAB, (1 + s % 5,), generator=rng)] for s in going]
        decoder.feed(going, news, [100 * turns[s] + s for s in going])
        for s, new in zip(going, news):
            histories[s] += new
            decoding.add(s)
    assert decoder.length.tolist() == [len(h) for h in histories] and turns == [3] * slots


@pytest.mark.slow
def test_the_compiled_step_and_prefill_draw_the_per_request_tokens():
    """``compile=True`` (inductor-fused step and prefill, as CUDA runs them) draws the same tokens:
    fusion may reorder float64 sums, never change a draw. Gemma3 only (the lm study's family):
    each compile costs minutes on two cores."""
    decoder = _play_three_turns(_gemma3(), window_block=4, compile=True)
    assert decoder.compile_error is None


def _play_three_turns(model, decoder_class=SlotDecoder, **options) -> SlotDecoder:
    """Three slots, three turns each, checked turn by turn against the per-request loop."""
    cap = 6
    decoder = decoder_class(model, slots=3, cache_tokens=100, stop_token_ids=STOPS, max_new_tokens=cap,
                          temperature=1.0, top_k=5, top_p=0.9, prefill_tokens=16,  # prefill in several chunks
                          **options)
    rng = torch.Generator().manual_seed(0)
    histories = [[int(t) for t in torch.randint(8, VOCAB, (n,), generator=rng)] for n in (3, 11, 7)]
    decoder.feed([0, 1, 2], histories, [10, 11, 12])
    turns = {0: 0, 1: 0, 2: 0}
    decoding = {0, 1, 2}
    while decoding:
        decoder.run(2)
        for end in decoder.collect(decoding):
            s = end.slot
            assert end.token_ids == _turn(model, histories[s], 10 * turns[s] + s + 10, cap)
            assert end.stopped == (end.token_ids[-1] in STOPS) and len(end.logprobs) == len(end.token_ids)
            histories[s] += end.token_ids
            turns[s] += 1
            decoding.discard(s)
            if turns[s] < 3:  # the next turn: two new "observation" tokens, only those prefilled
                new = [int(t) for t in torch.randint(8, VOCAB, (2 + s,), generator=rng)]
                decoder.feed([s], [new], [10 * turns[s] + s + 10])
                histories[s] += new
                decoding.add(s)
    assert decoder.length.tolist() == [len(h) for h in histories]
    assert decoder.decode_steps > 0 and 0 < decoder.live_slot_steps <= decoder.decode_steps * 3
    return decoder


def test_feeding_past_the_cache_is_refused(model):
    decoder = SlotDecoder(model, slots=1, cache_tokens=8, stop_token_ids=STOPS, max_new_tokens=2)
    with pytest.raises(ValueError, match="do not fit"):
        decoder.feed([0], [list(range(8, 17))], [0])



def test_a_step_that_fails_to_compile_runs_eagerly_and_says_why(model):
    """What the H200 showed once (an InductorError inside the compiled step): the decoder warns,
    keeps the reason, runs that function eagerly, and the draws are the per-request loop's."""
    def broken(*args):
        raise RuntimeError("CantSplit: inductor gave up")

    class Decoder(SlotDecoder):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self._step_fn = broken  # as if torch.compile had returned a function that fails

    decoder = _play_three_turns(model, decoder_class=Decoder, window_block=4)
    assert decoder.compile_error == "step: RuntimeError: CantSplit: inductor gave up"
    assert decoder._step_fn == decoder._step and decoder._prefill_fn == decoder._prefill_forward


@pytest.mark.parametrize("deterministic", [True, False])
def test_the_step_and_prefill_compile_in_inductors_deterministic_mode_unless_told_not_to(monkeypatch, deterministic):
    """Inductor times some kernel configurations on the device unless in its deterministic mode,
    and a configuration that reduces in another order rounds differently: a run and its frozen
    control compiled in two processes would sample different tokens from the same weights."""
    import torch._inductor.config as inductor

    calls = []
    monkeypatch.setattr(torch, "compile", lambda fn, **kwargs: calls.append(kwargs) or fn)
    SlotDecoder(_gemma3(), slots=2, cache_tokens=16, stop_token_ids=[1], max_new_tokens=4, compile=True,
                deterministic_compile=deterministic)
    expected = {"deterministic": True} if deterministic and hasattr(inductor, "deterministic") else {}
    assert calls == [{"options": expected}] * 2
    assert hasattr(inductor, "deterministic")  # this torch has the mode: the option is really passed


def test_a_prefill_chunk_below_one_column_is_refused(model):
    with pytest.raises(ValueError, match="prefill_chunk=0"):
        SlotDecoder(model, slots=1, cache_tokens=8, stop_token_ids=STOPS, max_new_tokens=2, prefill_chunk=0)
