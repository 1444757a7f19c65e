"""What the benchmarks' ``--small`` modes share (not a benchmark: tests/benchmarks' guard skips ``_`` files)."""

from __future__ import annotations

from typing import Any


def small_lm_protocol(protocol: Any) -> Any:
    """``protocol`` with its tokenizer corpus cut to one seller persona and one seed per domain, so the
    study's tokenizer trains in about a second (the vocabulary size, shapes and template are the study's)."""
    corpus = protocol.warm_start.corpus.model_copy(update={
        "sellers": protocol.warm_start.corpus.sellers[:1], "train_seeds_per_domain": 1,
        "validation_seeds_per_domain": 1})
    return protocol.model_copy(update={"warm_start": protocol.warm_start.model_copy(update={"corpus": corpus})})
