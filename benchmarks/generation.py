"""Seller generation throughput: batched ``hf:`` vs a per-turn ``generate`` loop vs vLLM, per size.

The workload is the sellers' own: prompts are seller views taken from scripted episodes
(boulware against tit-for-tat, every evaluated domain, all turns), rendered with the evaluation
template and the checkpoint's chat template, so prompt lengths are those the harness sends.
Every path generates exactly ``--new-tokens`` per prompt (no stop token ends a row early) with
the protocol's sampling (temperature 1.0, top-p 0.95, top-k 64), and is timed warm:

- ``batched``: ``negotiation.lm.BatchGenerator`` (what ``hf:`` runs on the CPU), batches of ``--batch``;
- ``static``: ``negotiation.lm.StaticBatchGenerator`` (what ``hf:`` and the token trainer run on
  CUDA: static cache, decode step replayed as a CUDA graph), batches of ``--batch``; its greedy
  tokens are compared with ``batched``'s on the same prompts (``greedy_agreement``);
- ``loop``: one ``model.generate`` call per prompt (what a per-turn agent would do), over the
  first ``--loop-prompts`` prompts only, as it is slow;
- ``vllm``: a real vLLM OpenAI server (``--vllm-python``, the CPU build's environment), all
  prompts sent at once as token ids to ``/v1/completions`` with ``ignore_eos``; skipped when
  no vLLM is given (e.g. on the GPU machine).

Model FLOP utilisation (with ``--peak-tflops``; default 989, H200 dense bf16, on CUDA) counts
``2 * matmul parameters`` per processed token (prompt and generated; the tied output projection
included) plus attention's ``4 * layers * heads * head_dim * context`` per token.

    python benchmarks/generation.py --sizes lm_xs,lm_s --threads 2                # 2 CPU cores, with vLLM
    python benchmarks/generation.py --sizes lm_m,lm_l,lm_xl --device cuda --dtype bfloat16 --no-vllm
    python benchmarks/generation.py --checkpoint outputs/lm/bases/lm_xs           # an existing folder
    python benchmarks/generation.py --small --out /tmp/gen.json                   # CI: lm_xs, 4 prompts, 8 tokens

Sizes are built untrained from the ``lm`` protocol (throughput does not depend on the weights);
a JSON of every figure goes to ``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SAMPLING = {"temperature": 1.0, "top_p": 0.95, "top_k": 64}


def seller_prompts(tokenizer: Any, n: int, max_tokens: int) -> list[list[int]]:
    """``n`` seller prompts (token ids, at most ``max_tokens`` long) spread over domains and turns."""
    from negotiation.agents import make_agent
    from negotiation.env import Negotiation, load_domains, make_scenario, render_messages
    from negotiation.protocol import env_config
    from negotiation.study import load_study

    env = env_config(load_study("demo").protocol, "evaluation")
    agents = {"seller": make_agent("scripted:boulware", "seller"), "buyer": make_agent("scripted:titfortat", "buyer")}
    kwargs = {"enable_thinking": False} if "enable_thinking" in (tokenizer.chat_template or "") else {}
    prompts: list[list[int]] = []
    for seed in range(1000):
        for domain in load_domains().values():
            game = Negotiation(make_scenario(domain, seed, 0.3), env, sample_seed=seed)
            while not game.done:
                view = game.view()
                if view.role == "seller":
                    messages = render_messages(view, "evaluation", converge_from_turn=env.max_turns)
                    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **kwargs)
                    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
                    if len(ids) <= max_tokens:
                        prompts.append(ids)
                game.apply(agents[view.role].respond(view))
            if len(prompts) >= 4 * n:
                return prompts[:: max(1, len(prompts) // n)][:n]
    return prompts[:n]


def matmul_parameters(model: Any) -> int:
    """Parameters that multiply every token: linear layers and the (tied) output projection."""
    import torch

    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    head = model.get_output_embeddings()
    tied = head is not None and head.weight is model.get_input_embeddings().weight
    return linear + (head.weight.numel() if tied else 0)


def flops(model: Any, prompt_lens: list[int], new_tokens: int) -> float:
    """Forward FLOPs of prefilling every prompt and generating ``new_tokens`` after each."""
    c = model.config
    per_token = 2 * matmul_parameters(model)
    attn = 4 * c.num_hidden_layers * c.num_attention_heads * getattr(c, "head_dim", c.hidden_size // c.num_attention_heads)
    total = 0.0
    for p in prompt_lens:
        total += per_token * p + attn * p * (p + 1) / 2  # prefill, causal
        total += per_token * new_tokens + attn * sum(p + t for t in range(1, new_tokens + 1))
    return total


def run_batched(model: Any, prompts: list[list[int]], new_tokens: int, batch: int, pad: int,
                static: bool = False, notes: dict[str, Any] | None = None) -> float:
    """Seconds for the batched generator (``static``: the fixed-shape one) to produce ``new_tokens``
    per prompt."""
    from negotiation.lm import BatchGenerator, GenerationRequest, StaticBatchGenerator

    if static:  # never stops early; what hf: and the token trainer run on CUDA
        generator: Any = StaticBatchGenerator(model, pad_token_id=pad, stop_token_ids=(-1,), max_batch=batch)
    else:
        generator = BatchGenerator(model, pad_token_id=pad, stop_token_ids=(-1,))
    requests = [GenerationRequest(prompt_ids=tuple(p), seed=i, max_new_tokens=new_tokens, **SAMPLING)
                for i, p in enumerate(prompts)]
    generator.generate(requests[:2])  # warm-up
    start = time.perf_counter()
    for i in range(0, len(requests), batch):
        out = generator.generate(requests[i:i + batch])
        assert all(len(g.token_ids) == new_tokens for g in out)
    seconds = _synced(start, model)
    if notes is not None and static:
        notes["cuda_graphs"] = generator.graphs
        notes["graph_error"] = generator.graph_error
    return seconds


def agreement(model: Any, prompts: list[list[int]], new_tokens: int, batch: int, pad: int) -> dict[str, float]:
    """Greedy tokens of the static generator against the dynamic one on the same prompts: the
    fraction of rows whose tokens agree to the end, and of tokens before a row's first difference
    (bf16 rounding of differently shaped passes can flip a near-tie; after that a row diverges)."""
    from negotiation.lm import BatchGenerator, GenerationRequest, StaticBatchGenerator

    requests = [GenerationRequest(prompt_ids=tuple(p), seed=i, max_new_tokens=new_tokens, temperature=0.0)
                for i, p in enumerate(prompts[:batch])]
    a = BatchGenerator(model, pad_token_id=pad, stop_token_ids=(-1,)).generate(requests)
    b = StaticBatchGenerator(model, pad_token_id=pad, stop_token_ids=(-1,), max_batch=batch).generate(requests)
    same_rows, prefix = 0, 0
    for x, y in zip(a, b):
        same_rows += x.token_ids == y.token_ids
        prefix += next((k for k, (u, v) in enumerate(zip(x.token_ids, y.token_ids)) if u != v), new_tokens)
    return {"rows_identical": same_rows / len(a), "tokens_before_first_difference": prefix / (len(a) * new_tokens)}


def run_loop(model: Any, prompts: list[list[int]], new_tokens: int, pad: int) -> float:
    """Seconds for one ``model.generate`` call per prompt."""
    import torch

    def one(ids: list[int]) -> None:
        x = torch.tensor([ids], device=model.device)
        model.generate(x, attention_mask=torch.ones_like(x), do_sample=True, max_new_tokens=new_tokens,
                       min_new_tokens=new_tokens, pad_token_id=pad, **SAMPLING)

    one(prompts[0][:64])  # warm-up
    start = time.perf_counter()
    for ids in prompts:
        one(ids)
    return _synced(start, model)


def _synced(start: float, model: Any) -> float:
    import torch

    if model.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


async def run_vllm(python: str, checkpoint: Path, prompts: list[list[int]], new_tokens: int,
                   context: int) -> dict[str, float]:
    """Seconds for a vLLM server to answer every prompt at once (and its start-up time)."""
    import httpx

    from negotiation.agents._llm_vllm import ServeSettings, VllmServer, free_port, is_cpu_build, serve_args

    port = free_port()
    settings = ServeSettings(tensor_parallel_size=1, max_model_len=context, gpu_memory_utilization=0.9,
                             chunked_prefill=not is_cpu_build(python), kv_cache_bytes=1 << 30)
    args = serve_args(python, str(checkpoint), settings, host="127.0.0.1", port=port, served_model_name="m",
                      module=True)
    server = VllmServer(args, host="127.0.0.1", port=port, startup_timeout_s=900)
    started = time.perf_counter()
    await server.start()
    startup = time.perf_counter() - started
    try:
        async with httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=len(prompts))) as client:
            async def one(i: int, ids: list[int]) -> int:
                body = {"model": "m", "prompt": ids, "max_tokens": new_tokens, "min_tokens": new_tokens,
                        "ignore_eos": True, "seed": i, **SAMPLING}
                reply = await client.post(f"{server.api_base}/completions", json=body)
                reply.raise_for_status()
                return int(reply.json()["usage"]["completion_tokens"])

            await one(0, prompts[0][:64])  # warm-up
            start = time.perf_counter()
            tokens = await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts)))
            seconds = time.perf_counter() - start
    finally:
        await server.stop()
    assert all(t == new_tokens for t in tokens), tokens
    return {"seconds": seconds, "startup_s": startup}


def size_models(args: argparse.Namespace, workdir: Path) -> list[tuple[str, Path]]:
    """``(name, folder)`` per size: given checkpoints, or the protocol's sizes built untrained."""
    found = [(Path(c).name, Path(c)) for c in args.checkpoint]
    if args.sizes:
        from negotiation.ladder import lm_size, write_tokenizer
        from negotiation.lm import build_model, load_tokenizer, save_checkpoint
        from negotiation.study import load_study

        protocol = load_study(args.study).protocol
        if args.small:
            from _small import small_lm_protocol

            protocol = small_lm_protocol(protocol)
        write_tokenizer(protocol, workdir / "tokenizer")
        tokenizer = load_tokenizer(workdir / "tokenizer")
        for name in args.sizes.split(","):
            model = build_model(lm_size(protocol, name), tokenizer, vocab_size=protocol.tokenizer.vocab_size)
            found.append((name, save_checkpoint(model, tokenizer, workdir / name)))
    if not found:
        raise SystemExit("give --sizes and/or --checkpoint")
    return found


def bench_size(name: str, folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, args.dtype)).to(args.device).eval()
    context = int(model.config.max_position_embeddings)
    prompts = seller_prompts(tokenizer, args.prompts, context - args.new_tokens)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    lens = [len(p) for p in prompts]
    row: dict[str, Any] = {"parameters": sum(p.numel() for p in model.parameters()),
                           "matmul_parameters": matmul_parameters(model), "prompts": len(prompts),
                           "prompt_tokens_mean": sum(lens) / len(lens), "new_tokens": args.new_tokens}
    notes: dict[str, Any] = {}
    paths = {"batched": (prompts, lambda: run_batched(model, prompts, args.new_tokens, args.batch, pad)),
             "static": (prompts, lambda: run_batched(model, prompts, args.new_tokens, args.batch, pad, True, notes)),
             "loop": (prompts[:args.loop_prompts], lambda: run_loop(model, prompts[:args.loop_prompts],
                                                                     args.new_tokens, pad))}
    if args.no_static:
        del paths["static"]
    for path, (used, timed) in paths.items():
        seconds = timed()
        row[path] = _figures(model, [len(p) for p in used], args, seconds)
        print(f"  {name} {path}: {row[path]['tokens_per_s']:,.0f} tokens/s", flush=True)
    if args.vllm_python:
        result = asyncio.run(run_vllm(args.vllm_python, folder, prompts, args.new_tokens, context))
        row["vllm"] = {**_figures(model, lens, args, result["seconds"]), "startup_s": result["startup_s"]}
        print(f"  {name} vllm: {row['vllm']['tokens_per_s']:,.0f} tokens/s", flush=True)
    if "static" in row:
        row["static"].update(notes)
        row["static"]["greedy_agreement"] = agreement(model, prompts, args.new_tokens, args.batch, pad)
    pairs = (("batched", "loop"), ("static", "loop"), ("static", "batched"), ("vllm", "loop"), ("vllm", "batched"))
    row["ratios"] = {f"{a}/{b}": row[a]["tokens_per_s"] / row[b]["tokens_per_s"] for a, b in pairs if a in row and b in row}
    return row


def _figures(model: Any, prompt_lens: list[int], args: argparse.Namespace, seconds: float) -> dict[str, float]:
    tokens = len(prompt_lens) * args.new_tokens
    figures = {"seconds": seconds, "generated_tokens": tokens, "tokens_per_s": tokens / seconds}
    if args.peak_tflops:
        figures["mfu"] = flops(model, prompt_lens, args.new_tokens) / seconds / (args.peak_tflops * 1e12)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="", help="lm protocol sizes, comma-separated (built untrained)")
    parser.add_argument("--checkpoint", action="append", default=[], help="an existing HF folder (repeatable)")
    parser.add_argument("--study", default="lm")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--loop-prompts", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=96, help="per prompt (the lm recipe's per-turn cap)")
    parser.add_argument("--vllm-python", default="", help="interpreter of the vLLM environment (.venv-vllm/bin/python)")
    parser.add_argument("--no-vllm", action="store_true")
    parser.add_argument("--no-static", action="store_true", help="skip the fixed-shape (static cache) generator")
    parser.add_argument("--peak-tflops", type=float, default=None, help="for MFU (default: 989 on cuda, none on cpu)")
    parser.add_argument("--out", default="outputs/benchmarks/generation.json")
    parser.add_argument("--small", action="store_true", help="CI: lm_xs on the CPU, 4 prompts, 8 new tokens, no vLLM")
    args = parser.parse_args()
    if args.small:
        args.sizes, args.checkpoint, args.device, args.dtype, args.no_vllm = "lm_xs", [], "cpu", "float32", True
        args.prompts, args.batch, args.loop_prompts, args.new_tokens = 4, 4, 2, 8
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.peak_tflops is None and args.device.startswith("cuda"):
        args.peak_tflops = 989.0
    if args.no_vllm:
        args.vllm_python = ""
    elif not args.vllm_python and (REPO / ".venv-vllm/bin/python").exists():
        args.vllm_python = str(REPO / ".venv-vllm/bin/python")
    machine = {"device": torch.cuda.get_device_name() if args.device.startswith("cuda") else platform.processor(),
               "torch_threads": torch.get_num_threads(), "dtype": args.dtype, "torch": torch.__version__}
    results: dict[str, Any] = {"version": 1, "machine": machine, "sampling": SAMPLING, "sizes": {}}
    with tempfile.TemporaryDirectory(prefix="bench-gen-") as tmp:
        for name, folder in size_models(args, Path(tmp)):
            results["sizes"][name] = bench_size(name, folder, args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    _print_table(results)
    print(f"figures: {out}")


def _print_table(results: dict[str, Any]) -> None:
    print(f"\n{'size':<10}{'params':>12}{'prompt':>8}{'loop t/s':>11}{'batched t/s':>13}{'static t/s':>12}"
          f"{'vllm t/s':>11}{'batched/loop':>14}{'static/batched':>16}{'vllm/batched':>14}{'MFU batched':>13}"
          f"{'MFU static':>12}")
    for name, r in results["sizes"].items():
        def tps(path: str) -> str:
            return f"{r[path]['tokens_per_s']:,.0f}" if path in r else "-"

        ratio = {k: f"{v:.2f}x" for k, v in r["ratios"].items()}
        def mfu(path: str) -> str:
            return f"{100 * r[path]['mfu']:.2f}%" if "mfu" in r.get(path, {}) else "-"

        print(f"{name:<10}{r['parameters']:>12,}{r['prompt_tokens_mean']:>8.0f}{tps('loop'):>11}{tps('batched'):>13}"
              f"{tps('static'):>12}{tps('vllm'):>11}{ratio.get('batched/loop', '-'):>14}"
              f"{ratio.get('static/batched', '-'):>16}{ratio.get('vllm/batched', '-'):>14}{mfu('batched'):>13}"
              f"{mfu('static'):>12}")


if __name__ == "__main__":
    main()
