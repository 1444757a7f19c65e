"""The ladder's two build steps, as the pipeline runs them: the tokenizer, then each size's base.

``write_tokenizer`` trains the shared tokenizer on the training split of the corpus and checks
its chat template with the turn-tag derivation (a template the rollout driver could not drive
is refused before any model is built). ``write_base`` builds a size from its seed, warm-starts
it by imitation (``negotiation.lm``'s imitation loop) and saves the Hugging Face folder every serving stack
loads, with ``warm_start.json`` recording what the warm start did.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from negotiation.errors import ConfigError
from negotiation.ladder._corpus import seller_chats, tokenizer_texts
from negotiation.lm import (
    PAD, SFT_RESUME_FILE, TurnTags, build_model, count_parameters, derive_turn_tags, encode_examples, load_tokenizer, save_checkpoint,
    template_kwargs, train_sft, train_tokenizer,
)

__all__ = ["TOKENIZER_RECORD", "WARM_START_RECORD", "ladder_tags", "lm_size", "write_base", "write_tokenizer"]

TOKENIZER_RECORD = "tokenizer_record.json"
WARM_START_RECORD = "warm_start.json"


def ladder_tags(protocol: Any, tokenizer: Any) -> TurnTags:
    """Turn tags of ``tokenizer`` under the protocol's thinking setting (checked round trip)."""
    return derive_turn_tags(tokenizer, template_kwargs(protocol.sampling.self_served_seller.thinking))


def lm_size(protocol: Any, size: str) -> Any:
    """The ``lm`` size ``size`` of ``protocol``; ``ConfigError`` naming the key otherwise."""
    spec = protocol.sizes.get(size)
    if spec is None or spec.kind != "lm":
        known = sorted(k for k, v in protocol.sizes.items() if v.kind == "lm")
        raise ConfigError(f"protocol/{protocol.study}/protocol.yaml:sizes.{size}: not an lm size (lm sizes: {known})")
    return spec


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    path.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _evenly_spaced(n: int, k: int) -> list[int]:
    """``min(n, k)`` indices spread evenly over ``range(n)``, first included."""
    return sorted({i * n // k for i in range(k)}) if k < n else list(range(n))


def write_tokenizer(protocol: Any, folder: str | Path) -> dict[str, Any]:
    """Train, check and save the study's tokenizer in ``folder``; return its record."""
    folder = Path(folder)
    texts = list(tokenizer_texts(protocol))
    tokenizer = train_tokenizer(texts, protocol.tokenizer.vocab_size)
    tags = ladder_tags(protocol, tokenizer)
    tokenizer.save_pretrained(folder)
    record = {"version": 1, "study": protocol.study, "vocab_size": protocol.tokenizer.vocab_size,
              "learned_tokens": len(tokenizer), "corpus_texts": len(texts),
              "corpus_chars": sum(len(t) for t in texts), "turn_tags": tags.model_dump(mode="json")}
    _write_json(folder / TOKENIZER_RECORD, record)
    return record


def write_base(protocol: Any, size: str, tokenizer_dir: str | Path, folder: str | Path, *,
               steps: int | None = None, device: str | None = None, log: Callable[[str], None] = print
               ) -> dict[str, Any]:
    """Build ``size`` from its seed, warm-start it on ``device`` and save it to ``folder``; return
    the record.

    ``steps`` (default: the recipe's ``steps`` for a cpu size, ``gpu_steps`` for a gpu size) may
    be 0: the folder then holds the untrained initialisation. A warm start cut short (a GPU call's
    time limit) resumes from ``folder``'s ``SFT_RESUME_FILE`` when called again.
    """
    spec = lm_size(protocol, size)
    recipe = protocol.warm_start
    tokenizer = load_tokenizer(tokenizer_dir)
    tags = ladder_tags(protocol, tokenizer)
    model = build_model(spec, tokenizer, vocab_size=protocol.tokenizer.vocab_size)
    gpu = spec.profile == "gpu"
    steps = (recipe.gpu_steps if gpu else recipe.steps) if steps is None else steps
    batch = recipe.gpu_batch_sequences if gpu else recipe.batch_sequences
    record: dict[str, Any] = {"version": 1, "study": protocol.study, "size": size, "parameters": count_parameters(model),
                              "steps": steps, "batch_sequences": batch, "recipe": recipe.model_dump(mode="json")}
    if steps > 0:
        train, dropped = encode_examples(tokenizer, tags, list(seller_chats(protocol, "train")), recipe.sequence_tokens)
        held_out = list(seller_chats(protocol, "validation"))
        picked = [held_out[i] for i in _evenly_spaced(len(held_out), recipe.validation_chats)]
        validation, _ = encode_examples(tokenizer, tags, picked, recipe.sequence_tokens)
        log(f"warm start of {size}: {record['parameters']:,} parameters, {len(train)} training chats "
            f"({dropped} longer than {recipe.sequence_tokens} tokens left out), {len(validation)} validation chats")
        model.to(device or "cpu")
        Path(folder).mkdir(parents=True, exist_ok=True)  # the resume file lives there until the base does
        result = train_sft(model, recipe, steps, batch, train, validation, tokenizer.convert_tokens_to_ids(PAD),
                           log=log, resume=Path(folder) / SFT_RESUME_FILE)
        model.to("cpu")
        result.dropped_too_long = dropped
        record.update({"train_examples": result.train_examples, "dropped_too_long": dropped,
                       "validation_examples": result.validation_examples,
                       "seller_tokens_seen": result.seller_tokens_seen, "val_loss": result.val_loss,
                       "final_val_loss": result.val_loss[-1][1], "train_loss": result.train_loss})
        log(f"warm start of {size}: {steps} steps in {result.seconds:.1f} s")
    save_checkpoint(model, tokenizer, folder)
    _write_json(Path(folder) / WARM_START_RECORD, record)
    (Path(folder) / SFT_RESUME_FILE).unlink(missing_ok=True)  # finished: the folder is the base alone
    return record
