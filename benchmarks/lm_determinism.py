"""The same short GPU run twice and the same generation requests twice: what repeats bit for bit.

    python benchmarks/lm_determinism.py --results outputs/lm-gpu --size lm_m --steps 2 --device cuda

Reads the size's base from ``<results>/init/<size>`` (the GPU profile's ``init@`` stage) and writes
``<results>/determinism.json`` (docs/training.md, "Determinism"). A measurement, not a stage.
"""

from __future__ import annotations

import argparse
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
    prompts = [tok.encode(f"<start_of_turn>user\nOffer {i}<end_of_turn>\n<start_of_turn>model\n") for i in range(64)]
    requests = [GenerationRequest(prompt_ids=tuple(p), seed=i, max_new_tokens=128, temperature=1.0, top_p=0.95,
                                  top_k=64) for i, p in enumerate(prompts)]
    gen = StaticBatchGenerator(model, pad_token_id=tok.pad_token_id or 0, stop_token_ids=[tok.eos_token_id])
    first, second = gen.generate(requests), gen.generate(requests)
    out["generation_identical"] = [g.token_ids for g in first] == [g.token_ids for g in second]
    out["generation_logprobs_identical"] = [g.logprobs for g in first] == [g.logprobs for g in second]
    (results / "determinism.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=2))



def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", default="outputs/lm-gpu")
    p.add_argument("--size", default="lm_m")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--device", default="cuda")
    determinism(p.parse_args())


if __name__ == "__main__":
    main()
