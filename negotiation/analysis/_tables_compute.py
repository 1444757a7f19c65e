"""Tables 7 and 8: what each arm needs to serve, and relative training compute per step.

Both read the protocol's ``sizes`` (Table 8 settings) and the serving each arm actually ran with:
the frozen protocol plus its deviations' ``values`` (``Report.served``, which the pipeline fills
from ``negotiation.registry.effective_protocol``),
so the paper's 31B arms show the four accelerators of deviation 17 while the frozen protocol
keeps its two. Relative FLOPs per step follow Appendix I: per-step compute is about proportional to
the parameter count ``N`` entering the pass (``C ≈ 2 N D_gen + 6 N D_train`` with ``D`` matched
across arms), reported under both conventions, effective and total parameters, each relative to
the smallest size.
"""

from __future__ import annotations

from typing import Any

from negotiation.analysis._tables import Report, Table, number
from negotiation.analysis._tables_paper import frontier_cost_note

__all__ = ["relative_flops", "serving_accelerators", "table7", "table8"]


def _llm_sizes(r: Report) -> list[str]:
    return [s for s in r.protocol.sizes if getattr(r.protocol.sizes[s], "effective_params_b", None) is not None]


def relative_flops(params: dict[str, float]) -> dict[str, float]:
    """``N / N_smallest`` per size (Appendix I's ratio of per-step compute at matched steps)."""
    smallest = min(params.values())
    return {size: value / smallest for size, value in params.items()}


def serving_accelerators(r: Report, arm: str) -> int | None:
    """Accelerators ``arm`` was served on: the effective protocol's ``eval_accelerators``."""
    size = r.arms[arm].size
    if size is None:
        return None
    protocol = r.served.get(arm, r.protocol)
    return getattr(protocol.sizes[size], "eval_accelerators", None)


def _size_accelerators(r: Report, size: str) -> Any:
    served = {serving_accelerators(r, n) for n, a in r.arms.items() if a.size == size}
    served.discard(None)
    return "/".join(str(v) for v in sorted(served)) if served else str(r.protocol.sizes[size].eval_accelerators)


def table8(r: Report) -> Table:
    """Table 8: per-size parameter counts, serving topology and relative training compute (no rows
    for a study without LLM sizes)."""
    sizes = _llm_sizes(r)
    if not sizes:
        return Table("table8", "Table 8: no LLM sizes in this study (parameter counts and serving apply to LLMs).",
                     ["Size"])
    spec = {s: r.protocol.sizes[s] for s in sizes}
    effective = relative_flops({s: spec[s].effective_params_b for s in sizes})
    total = relative_flops({s: spec[s].total_params_b for s in sizes})
    t = Table("table8", "Table 8: per-size parameter counts, serving topology and relative training compute at "
              "matched optimizer steps (relative FLOPs/step ∝ parameters, Appendix I; accelerators as served, "
              "deviations' values applied).", ["", *sizes])
    t.rows = [
        ["Effective parameters", *[f"{spec[s].effective_params_b:g}B" for s in sizes]],
        ["Total parameters", *[f"{spec[s].total_params_b:g}B" for s in sizes]],
        ["Train tensor-parallel degree", *[str(spec[s].train_tensor_parallel) for s in sizes]],
        ["Train micro-batch size", *[str(spec[s].train_micro_batch) for s in sizes]],
        ["Generation memory fraction", *[f"{spec[s].generation_memory_fraction:.2f}" for s in sizes]],
        [f"Eval serving accelerators ({spec[sizes[0]].accelerator_memory_gb:g} GB)",
         *[_size_accelerators(r, s) for s in sizes]],
        ["Relative FLOPs/step (effective params)", *[f"{effective[s]:.1f}×" for s in sizes]],
        ["Relative FLOPs/step (total params)", *[f"{total[s]:.1f}×" for s in sizes]],
    ]
    return t


def table7(r: Report) -> Table:
    """Table 7: each arm's S beside the hardware it was served on (reference sellers: API-served;
    no rows for a study without LLM sizes)."""
    t = Table("table7", "Table 7: score beside the hardware it took to serve (accelerators as served; reference "
              "sellers are API-served, so no accelerator count applies; throughput and latency not "
              "benchmarked). " + frontier_cost_note(r), ["Seller", "Effective / total", "Accelerators", "GB served", "S"])
    if not _llm_sizes(r):
        return t
    for name, arm in r.arms.items():
        if arm.kind == "reference":
            t.rows.append([r.label(name), "—", "—", "—", number(r.reading(name, "S"))])
            continue
        spec, count = r.protocol.sizes[arm.size], serving_accelerators(r, name)
        params = (f"{spec.effective_params_b:g}B" if spec.effective_params_b == spec.total_params_b
                  else f"{spec.effective_params_b:g}B / {spec.total_params_b:g}B")
        t.rows.append([r.label(name), params, str(count), f"{count * spec.accelerator_memory_gb:g}",
                       number(r.reading(name, "S"))])
    return t
