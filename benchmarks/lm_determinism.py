"""The same short GPU run twice and the same generation requests twice: what repeats bit for bit.

    python benchmarks/lm_determinism.py --results outputs/lm-gpu --size lm_m --steps 2 --device cuda
    python benchmarks/lm_determinism.py --small --results /tmp/det-small   # the plumbing, on the CPU

Reads the size's base from ``<results>/init/<size>`` (the GPU profile's ``init@`` stage) and writes
``<results>/determinism.json`` (docs/training.md, "Determinism"). A measurement, not a stage.
``--small`` builds an untrained lm_xs base (a one-persona tokenizer) under ``--results`` and runs
one step of 3 episodes with 16-token turns, and 4 generation requests of 16 tokens, on the CPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path


def determinism(args) -> None:
    """Repeat on the GPU what the CPU test checks exactly: the same run (seed, steps) twice from the
    size's base, then the same generation requests twice; write what repeated bit for bit."""
    import hashlib

    import pandas as pd
    import torch

    from negotiation.lm import GenerationRequest, StaticBatchGenerator
    from negotiation.study import load_study
    from negotiation.training.lm import LmRuntime, lm_train_config_for, train_lm_arm

    study, results = load_study("lm"), Path(args.results)
    if args.small:
        study = _small(study, results)
    arm = study.arms[f"{args.size}_shared"]
    cuda = args.device != "cpu"
    runtime = LmRuntime(device=args.device, dtype="bfloat16" if cuda else "float32", gradient_checkpointing=cuda,
                        micro_batch_tokens=65536)
    out: dict = {"size": args.size, "steps": args.steps, "device": args.device}
    runs = []
    for k in (1, 2):
        cfg = lm_train_config_for(study, arm.run, arm, base=results / "init" / args.size, runtime=runtime)
        cfg = cfg.model_copy(update={"arm": cfg.arm.model_copy(update={"steps": args.steps})})
        folder = results / "determinism" / f"repeat{k}"
        train_lm_arm(cfg, folder, track=False)
        runs.append(folder)
    a, b = (pd.read_csv(f / "curves.csv") for f in runs)
    columns = [c for c in a.columns if c.startswith("train/")]
    out["curves_identical"] = {c: bool((a[c] == b[c]).all()) for c in columns}
    out["curves_max_abs_difference"] = {c: float((a[c] - b[c]).abs().max()) for c in columns}
    digest = [hashlib.sha256((f / f"step_{args.steps}" / "model.safetensors").read_bytes()).hexdigest() for f in runs]
    out["checkpoints_identical"] = digest[0] == digest[1]
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(results / "init" / args.size, dtype=runtime.dtype).to(args.device).eval()
    tok = AutoTokenizer.from_pretrained(results / "init" / args.size)
    count, new_tokens = (4, 16) if args.small else (64, 128)
    prompts = [tok.encode(f"<start_of_turn>user\nOffer {i}<end_of_turn>\n<start_of_turn>model\n") for i in range(count)]
    requests = [GenerationRequest(prompt_ids=tuple(p), seed=i, max_new_tokens=new_tokens, temperature=1.0, top_p=0.95,
                                  top_k=64) for i, p in enumerate(prompts)]
    gen = StaticBatchGenerator(model, pad_token_id=tok.pad_token_id or 0, stop_token_ids=[tok.eos_token_id])
    first, second = gen.generate(requests), gen.generate(requests)
    out["generation_identical"] = [g.token_ids for g in first] == [g.token_ids for g in second]
    out["generation_logprobs_identical"] = [g.logprobs for g in first] == [g.logprobs for g in second]
    (results / "determinism.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=2))


def _small(study, results: Path):
    """``study`` with its protocol cut to seconds (one-persona corpus, 3 episodes of 16-token turns,
    one validation scenario) and an untrained base of its tokenizer under ``results/init/<size>``."""
    from _small import small_lm_protocol  # benchmarks/, on sys.path as the script's folder

    from negotiation.ladder import write_base, write_tokenizer

    protocol = small_lm_protocol(study.protocol)
    training = protocol.training.model_copy(update={
        "group_size": 3, "scenarios_per_step": 1, "episodes_per_step": 3, "validation_scenarios": 1,
        "sequences": protocol.training.sequences.model_copy(update={"new_tokens_per_turn": 16})})
    protocol = protocol.model_copy(update={"training": training})
    write_tokenizer(protocol, results / "tokenizer")
    write_base(protocol, "lm_xs", results / "tokenizer", results / "init" / "lm_xs", steps=0, log=lambda _: None)
    return dataclasses.replace(study, protocol=protocol)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", default="outputs/lm-gpu")
    p.add_argument("--size", default="lm_m")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--device", default="cuda")
    p.add_argument("--small", action="store_true", help="seconds on the CPU: lm_xs, 1 step (overrides the above)")
    args = p.parse_args()
    if args.small:
        args.size, args.steps, args.device = "lm_xs", 1, "cpu"
    determinism(args)


if __name__ == "__main__":
    main()
