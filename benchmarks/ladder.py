"""The ladder's size effect before any RL: per size, held-out loss, bad parses and S.

Builds the ``lm`` study's tokenizer, warm-starts every size of one profile (``--profile gpu`` on
the GPU machine: all sizes with the GPU recipe) and plays each base against the protocol's
evaluation buyers on ``--seeds`` evaluation seeds per evaluated domain, with the protocol's
evaluation prompt, sampling, per-turn seeds and token cap. Seller turns of all running episodes
are generated together (``negotiation.lm.BatchGenerator``); the engine parses and scores them as
in the harness. Prints one row per size and writes ``ladder.json`` under ``--out``.

    python benchmarks/ladder.py --profile cpu --seeds 1 --out /tmp/ladder      # 2 cores
    python benchmarks/ladder.py --profile gpu --seeds 4 --out $OUT              # one H200
    python benchmarks/ladder.py --small --out /tmp/ladder-small                 # CI: plumbing, seconds

``--small`` builds lm_xs from a cut tokenizer corpus with 2 warm-start steps of 2 chats and plays
it with 16-token turns for 3 rounds on one seed of one domain: the whole path in seconds, its figures meaning nothing.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np


def _sizes(protocol: Any, profile: str, only: list[str] | None) -> list[str]:
    names = [n for n, s in protocol.sizes.items() if s.kind == "lm" and (profile == "all" or s.profile == profile)]
    return [n for n in names if not only or n in only]


def _small(protocol: Any) -> Any:
    """The protocol with a cut tokenizer corpus and 16-token seller turns (``--small``)."""
    from _small import small_lm_protocol

    protocol = small_lm_protocol(protocol)
    recipe = protocol.warm_start.model_copy(update={"steps": 2, "batch_sequences": 2, "warmup_steps": 1,
                                                    "validation_every": 2, "validation_chats": 2})
    sequences = protocol.training.sequences.model_copy(update={"new_tokens_per_turn": 16})
    return protocol.model_copy(update={"warm_start": recipe, "training": protocol.training.model_copy(
        update={"sequences": sequences}), "environment": protocol.environment.model_copy(update={"max_rounds": 3})})


def play_base(protocol: Any, folder: Path, seeds: int, device: str, domains: int | None = None) -> dict[str, Any]:
    """Episodes of one base against every evaluation buyer on the first ``domains`` evaluated domains
    (default: all); S, deal rate, bad-parse fraction."""
    import torch
    from transformers import AutoModelForCausalLM

    from negotiation.agents import make_agent
    from negotiation.agents._llm_settings import turn_seed
    from negotiation.env import Negotiation, load_domain, make_scenario, render_messages
    from negotiation.lm import BatchGenerator, GenerationRequest, load_tokenizer
    from negotiation.protocol import env_config

    tokenizer = load_tokenizer(folder)
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).to(device).eval()
    generator = BatchGenerator(model, pad_token_id=tokenizer.pad_token_id,
                               stop_token_ids=model.generation_config.eos_token_id)
    s, config = protocol.sampling.self_served_seller, env_config(protocol, "evaluation")
    cap, converge = protocol.training.sequences.new_tokens_per_turn, protocol.environment.converge_from_turn
    games, buyers = [], []
    for domain in protocol.domains.evaluated[:domains]:
        for seed in range(protocol.seeds.evaluation.start, protocol.seeds.evaluation.start + seeds):
            for buyer in protocol.buyers.evaluation.values():
                games.append(Negotiation(make_scenario(load_domain(domain), seed, protocol.environment.dirichlet_alpha),
                                         config))
                buyers.append(make_agent(buyer.spec, "buyer"))
    start, tokens = time.perf_counter(), 0
    while not all(g.done for g in games):
        live = [i for i, g in enumerate(games) if not g.done]
        views = {i: games[i].view() for i in live}
        prompts = {i: tokenizer.apply_chat_template(render_messages(views[i], "evaluation", converge_from_turn=converge),
                                                    tokenize=False, add_generation_prompt=True, enable_thinking=False)
                   for i in live}
        requests = [GenerationRequest(prompt_ids=tuple(tokenizer(prompts[i], add_special_tokens=False)["input_ids"]),
                                      seed=turn_seed(games[i].sample_seed, views[i].turn, "seller"),
                                      max_new_tokens=cap, temperature=s.temperature, top_p=s.top_p, top_k=s.top_k)
                    for i in live]
        for i, out in zip(live, generator.generate(requests)):
            tokens += len(out.token_ids)
            games[i].apply(tokenizer.decode(list(out.token_ids), skip_special_tokens=True))
            if not games[i].done:
                games[i].apply(buyers[i].respond(games[i].view()))
    episodes = [g.record("base", "buyer") for g in games]
    seller_turns = sum(e.n_turns_of("seller") for e in episodes)
    return {"episodes": len(episodes), "S": float(np.mean([e.S for e in episodes])),
            "deal_rate": float(np.mean([e.deal for e in episodes])),
            "bad_parse_rate": sum(e.n_bad("seller") for e in episodes) / seller_turns,
            "seller_turns": seller_turns, "generated_tokens": tokens,
            "generate_seconds": round(time.perf_counter() - start, 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", choices=["cpu", "gpu", "all"], default="cpu",
                   help="sizes of one profile, or all sizes with the gpu recipe")
    p.add_argument("--sizes", nargs="*", help="only these sizes")
    p.add_argument("--seeds", type=int, default=1, help="evaluation seeds per domain")
    p.add_argument("--steps", type=int, default=None, help="warm-start steps (default: the recipe's)")
    p.add_argument("--out", required=True)
    p.add_argument("--small", action="store_true", help="lm_xs, cut corpus, 2 warm-start steps, 16-token turns")
    args = p.parse_args()
    import torch

    from negotiation.ladder import write_base, write_tokenizer
    from negotiation.study import load_study

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = True
    protocol = load_study("lm").protocol
    if args.profile == "all":  # one recipe for the whole ladder: every size warm-starts like a gpu size
        protocol = protocol.model_copy(update={"sizes": {
            n: s.model_copy(update={"profile": "gpu"}) if s.kind == "lm" else s for n, s in protocol.sizes.items()}})
    if args.small:
        protocol, args.profile, args.sizes, args.seeds, args.steps = _small(protocol), "cpu", ["lm_xs"], 1, 2
    out = Path(args.out)
    t0 = time.perf_counter()
    write_tokenizer(protocol, out / "tokenizer")
    rows = {"tokenizer_seconds": round(time.perf_counter() - t0, 1), "device": device, "sizes": {}}
    for size in _sizes(protocol, args.profile, args.sizes):
        t0 = time.perf_counter()
        record = write_base(protocol, size, out / "tokenizer", out / size, steps=args.steps, device=device)
        row = {"parameters": record["parameters"], "steps": record["steps"], "batch": record["batch_sequences"],
               "val_loss_start": record.get("val_loss", [[0, None]])[0][1], "val_loss": record.get("final_val_loss"),
               "warm_start_seconds": round(time.perf_counter() - t0, 1)}
        row.update(play_base(protocol, out / size, args.seeds, device, 1 if args.small else None))
        rows["sizes"][size] = row
        print(f"{size:6s} {row['parameters']:>12,} params  val loss {row['val_loss_start']:.3f} -> {row['val_loss']:.3f}  "
              f"bad parses {row['bad_parse_rate']:.3f}  S {row['S']:+.3f}  deals {row['deal_rate']:.2f}  "
              f"({row['episodes']} episodes; warm start {row['warm_start_seconds']} s, play {row['generate_seconds']} s)",
              flush=True)
        (out / "ladder.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
