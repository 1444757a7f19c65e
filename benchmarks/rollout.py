"""Rollout throughput of one GRPO step: the slot engine against the turn-synchronous loop.

Both paths play the same episodes (``training_scenarios`` of the ``lm`` protocol, one GRPO
step's worth) through ``play_token_episodes`` with the protocol's seller sampling, token caps and
rollout turns, on an untrained model of ``--size`` built by ``negotiation.lm.build_model`` with
the protocol's tokenizer (trained here, as ``benchmarks/generation.py`` does):

- ``engine``: ``default_generator``'s ``SlotRollout`` (slots keep their KV cache across turns,
  continuous batching, sampling inside the decode step, CUDA graph, a host sync every ``--sync-every`` steps);
- ``reference``: the turn-synchronous loop with the sampler the trainer used before the engine
  (``StaticBatchGenerator`` on CUDA, ``BatchGenerator`` on the CPU): whole histories re-prefilled every turn.

An untrained model almost never samples its end-of-turn token, so every turn would run to the cap.
``--mean-turn M`` (default 60; 0 = off) makes every ``M``-th token id a stop token as well: the
untrained distribution is near-uniform over the top-k, so turn lengths are roughly geometric
with mean ``M`` (the protocol's imitated turns are 40-235 tokens). The turns' text is gibberish,
so the environment ends episodes on bad parses after a few turns; both paths see the same rule.

Reported per path (after one warm-up play): seconds per rollout, generated tokens/s, decode
steps, share of live rows (tokens / (decode steps × rows)), and for the engine the host seconds
spent in environment steps (on CUDA they overlap the queued decode steps), and its device floor:
the seconds of one decode step over every slot with nothing else queued (the step has one fixed
shape, so live and idle slots cost the same), at the attention window of ``--floor-tokens``
cached tokens, and the tokens/s ceiling it sets (slots / step seconds): how far the rollout is
from the device's own speed. ``--prefill-chunks 64,0`` plays the engine once per prefill layout
(fixed-shape chunks of 64 columns, graph replays on CUDA; 0: each feed at its own shape, launched
from Python) side by side, ``--decode-kernels matmul,sdpa`` once per decode attention (batched
matmuls; the fused kernel); ``--profile`` (CUDA) adds the decode step's kernels by device time,
``--device-split`` one more play's device seconds in decode steps and in prefills beside its wall
clock (the rest: the device idle while the host works).

    python benchmarks/rollout.py --size lm_m --device cuda --dtype bfloat16 --episodes 128
    python benchmarks/rollout.py --size lm_m --device cuda --dtype bfloat16 --engine-only --compile --sync-debug
    python benchmarks/rollout.py --size lm_m --device cuda --dtype bfloat16 --engine-only --compile \
        --prefill-chunks 64,0 --decode-kernels matmul,sdpa --floor-grid --profile
    python benchmarks/rollout.py --small                              # seconds on the CPU (a test runs it)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def build(args: argparse.Namespace, workdir: Path) -> tuple[Any, Any, Any]:
    """``(protocol, tokenizer, model)``: the size untrained, on the device in the dtype."""
    import torch

    from negotiation.ladder import lm_size, write_tokenizer
    from negotiation.lm import build_model, load_tokenizer
    from negotiation.study import load_study

    protocol = load_study(args.study).protocol
    if args.small:  # the tokenizer from a cut corpus (seconds); the model's shapes are the size's own
        from _small import small_lm_protocol

        protocol = small_lm_protocol(protocol)
    write_tokenizer(protocol, workdir / "tokenizer")
    tokenizer = load_tokenizer(workdir / "tokenizer")
    model = build_model(lm_size(protocol, args.size), tokenizer, vocab_size=protocol.tokenizer.vocab_size)
    model = model.to(device=args.device, dtype=getattr(torch, args.dtype)).eval()
    return protocol, tokenizer, model


def reference_generator(model: Any, tokenizer: Any, sampling: Any, stops: list[int], rows: int, context: int,
                        counter: dict[str, int]) -> Any:
    """The sampler of the turn-synchronous loop, counting decode steps and rows per call."""
    from negotiation.lm import BatchGenerator, GenerationRequest, StaticBatchGenerator

    pad = tokenizer.pad_token_id
    if model.device.type == "cuda":
        engine: Any = StaticBatchGenerator(model, pad_token_id=pad, stop_token_ids=stops, max_batch=rows,
                                           cache_tokens=context)
    else:
        engine = BatchGenerator(model, pad_token_id=pad, stop_token_ids=stops)

    def generate(prompts: Any, seeds: Any) -> list[list[int]]:
        requests = [GenerationRequest(prompt_ids=tuple(p), seed=int(s), max_new_tokens=sampling.max_tokens,
                                      temperature=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k)
                    for p, s in zip(prompts, seeds)]
        out = [list(g.token_ids) for g in engine.generate(requests)]
        steps = max(len(o) for o in out)
        counter["steps"] += steps
        counter["row_steps"] += steps * (rows if model.device.type == "cuda" else len(out))
        return out

    return generate


def play(protocol: Any, tokenizer: Any, model: Any, generate: Any, stops: list[int], args: argparse.Namespace) -> Any:
    import torch

    from negotiation.training.lm import play_token_episodes
    from negotiation.training.nemo import NegotiationStepLogic, training_scenarios

    settings, seq, turns = args.settings, args.sequences, args.rollout_turns
    states = training_scenarios(protocol, offset=0, count=args.episodes, seed=0)
    with torch.no_grad(), NegotiationStepLogic(settings) as logic:
        return play_token_episodes(states, list(range(args.episodes)), tokenizer=tokenizer, generate=generate,
                                   settings=settings, prompt_tokens=seq.prompt_tokens, context_tokens=seq.context_tokens,
                                   new_tokens=seq.new_tokens_per_turn, rollout_turns=turns, stop_ids=stops, logic=logic)


def device_split(decoder: Any, fn: Any, device: str) -> dict[str, Any]:
    """``fn()`` (one play) with a timer around each of ``decoder``'s ``run`` (decode steps) and
    ``feed`` (prefills) calls: seconds of each on the device (CUDA events in the stream; on the CPU,
    where the work is synchronous, the host clock) beside the play's wall clock. What neither
    covers is the device idle (host work it waited for), so a play bound by the device shows
    little rest, and the prefill share says whether cutting the decode step alone can pay.
    A segment's events also count host launch gaps inside it, so the rest is a lower bound."""
    import torch

    spans: dict[str, list[Any]] = {"run": [], "feed": []}

    def stamp() -> Any:
        if device == "cuda":
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def timed_call(name: str, method: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            start = stamp()
            out = method(*args, **kwargs)
            spans[name].append((start, stamp()))
            return out
        return call

    for name in spans:  # instance attributes shadow the methods for this play only
        setattr(decoder, name, timed_call(name, getattr(decoder, name)))
    try:
        _, wall = timed(fn, device)
    finally:
        for name in spans:
            delattr(decoder, name)
    seconds = {name: sum(start.elapsed_time(end) / 1e3 if device == "cuda" else end - start for start, end in pairs)
               for name, pairs in spans.items()}
    return {"wall_s": round(wall, 3), "decode_s": round(seconds["run"], 3), "prefill_s": round(seconds["feed"], 3),
            "rest_s": round(wall - seconds["run"] - seconds["feed"], 3), "decode_calls": len(spans["run"]),
            "feed_calls": len(spans["feed"])}


def synchronizing_calls(fn: Any) -> tuple[Any, dict[str, int]]:
    """``fn()`` under CUDA's sync debug mode: every operation that made the host wait for the device,
    counted by the Python line that called it (``file:line``; CUDA only). The engine's own read
    of the slots' state (``collect``) is one per sync by design; any other is a stall to remove."""
    import torch

    found: dict[str, int] = {}
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = fn()
    finally:
        torch.cuda.set_sync_debug_mode(previous)
    for w in caught:
        if "synchroniz" in str(w.message):  # the innermost Python frame that called the op
            site = f"{Path(w.filename).name}:{w.lineno}"
            found[site] = found.get(site, 0) + 1
    return out, dict(sorted(found.items(), key=lambda kv: -kv[1]))


def decode_floor(decoder: Any, cached: int, steps: int, device: str) -> dict[str, float]:
    """Seconds per decode step of ``decoder`` over all its slots, every slot holding ``cached``
    tokens (a prefill of one id), and the tokens/s that step allows when every slot is live."""
    slots = list(range(decoder.slots))
    decoder.release(slots)
    decoder.feed(slots, [[1] * cached] * len(slots), seeds=slots)
    decoder.run(2)  # capture or compile at this window, outside the timing
    _, seconds = timed(lambda: decoder.run(steps), device)
    decoder.release(slots)
    step = seconds / steps
    return {"floor_cached_tokens": cached, "floor_step_ms": round(step * 1e3, 4),
            "ceiling_tokens_per_s": round(decoder.slots / step, 1)}


def floor_grid(model: Any, tokenizer: Any, sampling: Any, stops: list[int], context: int,
               args: argparse.Namespace) -> list[dict[str, float]]:
    """The device floor at a quarter of the slots and at a short window too: a step whose cost
    barely moves with slots and window is bound by its kernel launches, one that scales with
    them by attention's reads (then fewer rows or a tighter window would pay)."""
    from negotiation.training.lm import default_generator

    rows = []
    for slots in sorted({args.episodes, max(1, args.episodes // 4)}, reverse=True):
        engine = default_generator(model, tokenizer, sampling=sampling, stop_ids=stops, max_batch=slots,
                                   cache_tokens=context, compile=args.compile,
                                   deterministic_compile=not args.compile_autotune,
                                   matmul_decode=args.decode_kernels[0] == "matmul")
        for cached in sorted({min(256, args.floor_tokens), args.floor_tokens}):
            rows.append({"slots": slots, **decode_floor(engine.decoder, cached, args.floor_steps, args.device)})
    return rows


def decode_profile(model: Any, sampling: Any, stops: list[int], context: int, args: argparse.Namespace,
                   top: int = 12) -> list[dict[str, Any]]:
    """The decode step's CUDA kernels by device time per step (``torch.profiler``), the step run
    without its graph (the kernels are the graph's; launch gaps are not counted): a few kernels
    that dominate say which part of the step to cut, a flat list says the count of kernels does."""
    from torch.profiler import ProfilerActivity, profile

    from negotiation.lm import SlotDecoder

    decoder = SlotDecoder(model, slots=args.episodes, cache_tokens=context, stop_token_ids=stops,
                          max_new_tokens=sampling.max_tokens, temperature=sampling.temperature or 1.0,
                          top_k=sampling.top_k, top_p=sampling.top_p, cuda_graph=False, compile=args.compile,
                          deterministic_compile=not args.compile_autotune,
                          matmul_decode=args.decode_kernels[0] == "matmul")
    slots = list(range(decoder.slots))
    decoder.feed(slots, [[1] * args.floor_tokens] * len(slots), seeds=slots)
    decoder.run(3)  # compile outside the profile
    steps = 20
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        timed(lambda: decoder.run(steps), "cuda")
    events = [e for e in prof.key_averages() if getattr(e, "self_device_time_total", 0) > 0]
    total = sum(e.self_device_time_total for e in events)
    events.sort(key=lambda e: -e.self_device_time_total)
    rows = [{"kernel": e.key[:90], "ms_per_step": round(e.self_device_time_total / steps / 1e3, 4),
             "calls_per_step": e.count // steps, "share": round(e.self_device_time_total / total, 3)} for e in events[:top]]
    return [{"kernel": "(all kernels)", "ms_per_step": round(total / steps / 1e3, 4),
             "calls_per_step": sum(e.count for e in events) // steps, "share": 1.0}] + rows


def variant_name(k: int, kernel0: str, chunk: int, kernel: str) -> str:
    """``engine`` for the first engine variant, ``engine_prefill_<N|each>`` or ``engine_decode_<kernel>`` beside it."""
    if k == 0:
        return "engine"
    return f"engine_prefill_{chunk or 'each'}" if kernel == kernel0 else f"engine_decode_{kernel}"


def save(out: dict[str, Any], args: argparse.Namespace, key: str) -> None:
    """The figures so far, to ``--out``, and ``out[key]`` as a line to stderr (a run cut short keeps them)."""
    if args.out:
        args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"{key}: {json.dumps(out[key])[:300]}", file=sys.stderr, flush=True)


def timed(fn: Any, device: str) -> tuple[Any, float]:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return out, time.perf_counter() - start


def bench(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    from negotiation.agents import Decoding
    from negotiation.training.lm import default_generator
    from negotiation.training.nemo import derive_turn_tags, protocol_env_settings, stop_token_ids, template_kwargs

    protocol, tokenizer, model = build(args, workdir)
    recipe = protocol.gpu_training if args.device == "cuda" and protocol.gpu_training else protocol.training
    args.sequences = recipe.sequences.model_copy(update={"new_tokens_per_turn": args.new_tokens or
                                                          recipe.sequences.new_tokens_per_turn})
    args.rollout_turns = args.rollout_turns or recipe.rollout_turns
    tags = derive_turn_tags(tokenizer, template_kwargs(False))
    args.settings = protocol_env_settings(protocol, tags)
    stops = list(stop_token_ids(tags, tokenizer.eos_token_id))
    if args.mean_turn:
        stops += [t for t in range(len(tokenizer)) if t % args.mean_turn == 0 and t not in stops]
    sampling = Decoding.from_protocol(protocol.sampling.self_served_seller, max_tokens=args.sequences.new_tokens_per_turn)
    context = args.sequences.context_tokens
    chunks, kernels = args.prefill_chunks, args.decode_kernels
    variants = [(c, kernels[0]) for c in chunks] + [(chunks[0], k) for k in kernels[1:]]
    engines = {variant_name(k, kernels[0], c, d):
               default_generator(model, tokenizer, sampling=sampling, stop_ids=stops, max_batch=args.episodes,
                                 cache_tokens=context, sync_every=args.sync_every, compile=args.compile,
                                 deterministic_compile=not args.compile_autotune, prefill_chunk=c,
                                 matmul_decode=d == "matmul")
               for k, (c, d) in enumerate(variants)}
    counter = {"steps": 0, "row_steps": 0}
    reference = reference_generator(model, tokenizer, sampling, stops, args.episodes, context, counter)
    out: dict[str, Any] = {"size": args.size, "device": args.device, "dtype": args.dtype, "episodes": args.episodes,
                           "new_tokens_per_turn": args.sequences.new_tokens_per_turn, "rollout_turns": args.rollout_turns,
                           "mean_turn": args.mean_turn, "sync_every": args.sync_every, "compile": args.compile,
                           "prefill_chunks": chunks, "decode_kernels": kernels}
    paths = list(engines.items()) + ([] if args.engine_only else [("reference", reference)])
    ids: dict[str, Any] = {}
    for name, generate in paths:
        play(protocol, tokenizer, model, generate, stops, args)  # warm-up: allocation, graph capture
        counter.update(steps=0, row_steps=0)
        ep, seconds = timed(lambda: play(protocol, tokenizer, model, generate, stops, args), args.device)
        tokens = int(ep.gen_tokens.sum())
        row = {"seconds": round(seconds, 3), "gen_tokens": tokens, "tokens_per_s": round(tokens / seconds, 1),
               "turns": sum(sum(m[k] and (k + 1 == len(m) or not m[k + 1]) for k in range(len(m))) for m in ep.gen_mask),
               "truncated": int(ep.truncated.sum())}
        if name.startswith("engine"):
            engine, s = engines[name], engines[name].stats
            row.update(decode_steps=s.decode_steps, live_share=round(s.live_share, 3), env_seconds=round(s.env_seconds, 3),
                       feed_seconds=round(s.feed_seconds, 3), wait_seconds=round(s.wait_seconds, 3),
                       env_calls=s.env_steps, graph_error=engine.decoder.graph_error,
                       compile_error=engine.decoder.compile_error)
            if name != "engine":
                row["engine_speedup"] = round(out["engine"]["tokens_per_s"] / row["tokens_per_s"], 2)
        elif name == "reference":
            row.update(decode_steps=counter["steps"], live_share=round(tokens / max(1, counter["row_steps"]), 3))
        if name == "engine" and args.device_split:  # an extra play: the timers sit in the stream
            row["device_split"] = device_split(generate.decoder, lambda: play(protocol, tokenizer, model, generate,
                                                                               stops, args), args.device)
        if name == "engine" and args.sync_debug:  # an extra, untimed play: the debug mode slows every op
            row["sync_sites"] = synchronizing_calls(lambda: play(protocol, tokenizer, model, generate, stops, args))[1]
        out[name], ids[name] = row, ep.ids
        save(out, args, name)
    if not args.engine_only:
        out["same_tokens"] = ids["engine"] == ids["reference"]
    if args.small and len(engines) > 1:  # float64 on the CPU: every engine variant draws the same tokens
        out["same_tokens_every_engine"] = all(ids[name] == ids["engine"] for name in engines)
    # the device floor and profile after every play: a call cut by its time limit keeps the side-by-side
    first = out["engine"]
    first.update(decode_floor(engines["engine"].decoder, args.floor_tokens, args.floor_steps, args.device))
    save(out, args, "engine")
    if args.floor_grid:
        first["floor_grid"] = floor_grid(model, tokenizer, sampling, stops, context, args)
        save(out, args, "engine")
    if args.profile:
        first["decode_profile"] = decode_profile(model, sampling, stops, context, args)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="lm_m")
    p.add_argument("--study", default="lm")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float64"))
    p.add_argument("--episodes", type=int, default=128)
    p.add_argument("--sync-every", type=int, default=8)
    p.add_argument("--mean-turn", type=int, default=60, help="every M-th token id also ends a turn (0: off)")
    p.add_argument("--new-tokens", type=int, default=0, help="turn cap (0: the protocol's)")
    p.add_argument("--rollout-turns", type=int, default=0, help="turn cap per episode (0: the protocol's)")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--floor-tokens", type=int, default=1536, help="cached tokens per slot of the device-floor step")
    p.add_argument("--floor-steps", type=int, default=200, help="decode steps the device floor times")
    p.add_argument("--floor-grid", action="store_true",
                   help="also time the device floor at a quarter of the slots and at a 256-token window")
    p.add_argument("--engine-only", action="store_true", help="time the engine alone (e.g. a sweep of --sync-every)")
    p.add_argument("--prefill-chunks", default="64",
                   help="comma list: the engine once per prefill layout (N: fixed chunks of N columns, graph "
                        "replays on CUDA; 0: each feed at its shape); the first is 'engine', the others beside it")
    p.add_argument("--decode-kernels", default="matmul",
                   help="comma list of the decode step's attention (matmul, sdpa: the fused kernel), beside each other")
    p.add_argument("--profile", action="store_true", help="(cuda) the decode step's kernels by device time")
    p.add_argument("--device-split", action="store_true",
                   help="one more engine play timing its decode runs and prefills on the device; the rest is idle")
    p.add_argument("--compile", action="store_true", help="torch.compile the engine's decode step and prefill")
    p.add_argument("--compile-autotune", action="store_true",
                   help="compile without inductor's deterministic mode (kernel configurations timed on the device)")
    p.add_argument("--sync-debug", action="store_true",
                   help="(cuda) one more engine play under CUDA's sync debug mode: where the host waited")
    p.add_argument("--small", action="store_true",
                   help="lm_xs in float64, 4 episodes, 24-token turns, 3 turns: seconds on the CPU, tokens exactly equal")
    p.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = p.parse_args(argv)
    if not set(args.decode_kernels.split(",")) <= {"matmul", "sdpa"}:
        p.error(f"--decode-kernels {args.decode_kernels}: each is matmul or sdpa")
    if (args.sync_debug or args.profile) and args.device != "cuda":
        p.error("--sync-debug and --profile need --device cuda")
    if args.small:
        args.size, args.episodes, args.new_tokens, args.rollout_turns, args.mean_turn = "lm_xs", 4, 24, 3, 12
        args.floor_tokens, args.floor_steps, args.floor_grid, args.device_split = 64, 4, True, True
        args.prefill_chunks = "8,0"  # the fixed-shape layout beside each feed's own, eagerly
        args.decode_kernels = "matmul,sdpa"  # the same on the CPU (its decode always runs SDPA): the plumbing
        args.dtype = "float64"  # both paths then sample the same tokens exactly (same_tokens)
    args.prefill_chunks = [int(c) for c in args.prefill_chunks.split(",")]  # parsed once, read as lists
    args.decode_kernels = args.decode_kernels.split(",")
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        out = bench(args, Path(tmp))
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":
    main()
