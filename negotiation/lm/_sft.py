"""Imitation warm start: supervised fine-tuning of a fresh model on scripted sellers' turns.

A randomly initialised model writes no JSON at all, so RL from it would only ever see bad
parses. The warm start makes each size an "instruct base" first, by imitating the scripted
seller personas of ``warm_start.corpus`` (``negotiation.ladder``). The recipe, read top to
bottom in ``warm_start``:

- examples: every training chat encoded by ``encode_chat`` with the tokenizer's turn tags (the
  same derivation the NeMo-RL adapter uses), loss mask 1 on seller tokens only; examples longer
  than ``sequence_tokens`` are left out and counted;
- order: one ``numpy`` Generator seeded with ``warm_start.seed`` permutes the examples, batches
  of ``batch_sequences`` are taken in that order (a new permutation per pass);
- loss: next-token cross-entropy averaged over the batch's seller tokens (the LM head runs only at
  the positions that predict one, ``target_loss``);
- AdamW (β 0.9/0.95, ``weight_decay``), float32 weights (bf16 autocast on CUDA), gradient-norm clip 1.0, linear warmup over
  ``warmup_steps`` then cosine to a tenth of ``learning_rate`` on the last step;
- validation: the same loss over ``validation_chats`` held-out chats (validation seeds), at step 0, every
  ``validation_every`` steps and after the last step;
- resume: with a ``resume`` file the loop's state is saved at every validation point after step 0
  and an interrupted warm start continues from it exactly (``_sft_resume``).

Same protocol, same size, same seed: the same checkpoint bytes on the same machine (tested).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from negotiation.lm._sft_resume import read_sft_resume, write_sft_resume
from negotiation.lm._turn_tags import TurnTags, encode_chat

__all__ = ["Chat", "SftResult", "encode_examples", "lr_at_step", "masked_lm_loss", "target_loss", "train_sft"]

GRAD_CLIP = 1.0


@dataclass(frozen=True)
class Chat:
    """One imitation example: chat messages whose assistant turns are the seller's targets."""

    messages: tuple[dict[str, str], ...]
    """System / user / assistant messages, ending with an assistant (seller) turn."""
    variant: str
    """Prompt variant it was rendered in."""
    domain: str
    seed: int
    seller: str
    """Scripted persona spec that wrote the assistant turns."""


@dataclass
class SftResult:
    """What a warm start did; written beside the checkpoint as ``warm_start.json``."""

    steps: int
    train_examples: int
    dropped_too_long: int
    validation_examples: int
    seller_tokens_seen: int
    val_loss: list[tuple[int, float]] = field(default_factory=list)
    """``(step, mean seller-token loss on the validation chats)``."""
    train_loss: list[tuple[int, float]] = field(default_factory=list)
    seconds: float = 0.0


def encode_examples(tokenizer: Any, tags: TurnTags, chats: Sequence[Chat], max_tokens: int
                    ) -> tuple[list[tuple[list[int], list[int]]], int]:
    """``(ids, mask)`` of every chat no longer than ``max_tokens``, and how many were longer."""
    kept, dropped = [], 0
    for chat in chats:
        ids, mask = encode_chat(tokenizer, tags, chat.messages)
        if len(ids) > max_tokens:
            dropped += 1
        else:
            kept.append((ids, mask))
    return kept, dropped


def lr_at_step(step: int, steps: int, peak: float, warmup: int) -> float:
    """Linear warmup to ``peak`` over ``warmup`` steps, then cosine to ``peak / 10`` at ``steps - 1``."""
    if step < warmup:
        return peak * (step + 1) / warmup
    span = max(1, steps - 1 - warmup)
    floor = peak / 10
    return floor + 0.5 * (peak - floor) * (1 + math.cos(math.pi * min(1.0, (step - warmup) / span)))


def _batch(examples: Sequence[tuple[list[int], list[int]]], pad_id: int) -> tuple[Any, Any, Any]:
    """Right-padded ``input_ids``, ``attention_mask`` and loss ``mask``, each ``[batch, longest]``."""
    import torch

    longest = max(len(ids) for ids, _ in examples)
    ids = torch.full((len(examples), longest), pad_id, dtype=torch.long)
    attention = torch.zeros((len(examples), longest), dtype=torch.long)
    mask = torch.zeros((len(examples), longest), dtype=torch.float32)
    for row, (x, m) in enumerate(examples):
        ids[row, :len(x)] = torch.tensor(x)
        attention[row, :len(x)] = 1
        mask[row, :len(m)] = torch.tensor(m, dtype=torch.float32)
    return ids, attention, mask


def masked_lm_loss(logits: Any, ids: Any, mask: Any) -> tuple[Any, Any]:
    """Summed next-token loss over masked targets and their count.

    ``logits`` ``[B, L, V]``; ``ids`` ``[B, L]``; ``mask`` ``[B, L]`` (1 where the token is a
    target). Position ``t`` predicts token ``t + 1``.
    """
    import torch.nn.functional as F

    targets, weights = ids[:, 1:], mask[:, 1:]
    nll = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(), targets.reshape(-1),
                          reduction="none").view_as(weights)
    return (nll * weights).sum(), weights.sum()


def target_loss(model: Any, ids: Any, attention: Any, mask: Any) -> tuple[Any, Any]:
    """``masked_lm_loss`` of ``model`` on a batch, with the LM head run only where it is needed.

    Seller tokens are a few percent of a chat (the re-rendered prompt dominates), and the vocabulary
    projection of every position is most of a small model's cost, so the head runs only at the
    positions some row predicts a target from (``logits_to_keep``, which every transformers causal
    LM takes). The result equals ``masked_lm_loss`` of the full logits (tested).
    ``ids``, ``attention``, ``mask``: ``[B, L]``.
    """
    import torch

    weights = mask[:, 1:]
    keep = torch.nonzero(weights.sum(0) > 0).squeeze(1)  # [K] positions t that predict a target t + 1
    logits = model(input_ids=ids, attention_mask=attention, logits_to_keep=keep).logits  # [B, K, V]
    nll = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),
                                            ids[:, 1:][:, keep].reshape(-1), reduction="none")
    kept = weights[:, keep]
    return (nll.view_as(kept) * kept).sum(), kept.sum()


def _autocast(model: Any) -> Any:
    """bf16 autocast on CUDA (float32 weights and optimizer); nothing on the CPU."""
    import contextlib

    import torch

    if model.device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _validation_loss(model: Any, examples: Sequence[tuple[list[int], list[int]]], pad_id: int,
                     batch: int) -> float:
    import torch

    total, count = 0.0, 0.0
    with torch.no_grad():
        for i in range(0, len(examples), batch):
            ids, attention, mask = (t.to(model.device) for t in _batch(examples[i:i + batch], pad_id))
            loss, n = target_loss(model, ids, attention, mask)
            total, count = total + float(loss), count + float(n)
    return total / max(count, 1.0)


def train_sft(model: Any, recipe: Any, steps: int, batch_sequences: int, train: Sequence[tuple[list[int], list[int]]],
              validation: Sequence[tuple[list[int], list[int]]], pad_id: int, *, log: Any = print,
              resume: Path | None = None) -> SftResult:
    """Fine-tune ``model`` in place on ``train``: ``steps`` steps of ``batch_sequences`` chats with
    ``recipe``'s rate, warmup, decay and order seed (``WarmStart``), on the model's device.
    ``resume``: a file the loop's state is saved to at every validation point and continued from
    (``_sft_resume``; a GPU call's time limit then costs at most ``validation_every`` steps)."""
    import torch

    start = time.perf_counter()
    result = SftResult(steps=steps, train_examples=len(train), dropped_too_long=0,
                       validation_examples=len(validation), seller_tokens_seen=0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.learning_rate, betas=(0.9, 0.95),
                                  weight_decay=recipe.weight_decay)
    rng = np.random.default_rng(recipe.seed)
    order: list[int] = []
    key = _resume_key(model, recipe, steps, batch_sequences, train, validation)
    first, before = 0, 0.0
    restored = read_sft_resume(resume, key, model, optimizer, rng, result) if resume is not None else None
    if restored is not None:
        first, order, before = restored
        log(f"warm start resumes at step {first} from {resume}")
    for step in range(first, steps):
        if step % recipe.validation_every == 0 and (restored is None or step > first):
            _record_validation(model, validation, pad_id, batch_sequences, step, result, log)
            if resume is not None and step > 0:
                write_sft_resume(resume, key, step, model, optimizer, rng, order, result,
                                 before + time.perf_counter() - start)
        while len(order) < batch_sequences:
            order += [int(i) for i in rng.permutation(len(train))]
        picked, order = order[:batch_sequences], order[batch_sequences:]
        _sft_step(model, optimizer, [train[i] for i in picked], pad_id,
                  lr_at_step(step, steps, recipe.learning_rate, recipe.warmup_steps), step, result)
    _record_validation(model, validation, pad_id, batch_sequences, steps, result, log)
    model.eval()
    result.seconds = before + time.perf_counter() - start
    return result


def _resume_key(model: Any, recipe: Any, steps: int, batch: int, train: Sequence, validation: Sequence) -> dict[str, Any]:
    """What a saved warm start must match to be continued: its budget, recipe and data."""
    fields = ("learning_rate", "warmup_steps", "weight_decay", "seed", "validation_every")
    return {"steps": steps, "batch_sequences": batch, "train_examples": len(train),
            "validation_examples": len(validation), "parameters": sum(p.numel() for p in model.parameters()),
            **{name: getattr(recipe, name) for name in fields}}


def _sft_step(model: Any, optimizer: Any, examples: Sequence[tuple[list[int], list[int]]], pad_id: int,
              lr: float, step: int, result: SftResult) -> None:
    """One optimizer step on ``examples`` at rate ``lr``; its loss goes into ``result``."""
    import torch

    ids, attention, mask = (t.to(model.device) for t in _batch(examples, pad_id))
    model.train()
    with _autocast(model):
        loss_sum, n = target_loss(model, ids, attention, mask)
    loss = loss_sum / n.clamp(min=1.0)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.step()
    result.seller_tokens_seen += int(n)
    result.train_loss.append((step, float(loss.detach())))


def _record_validation(model: Any, validation: Sequence, pad_id: int, batch: int, step: int,
                       result: SftResult, log: Any) -> None:
    model.eval()
    value = _validation_loss(model, validation, pad_id, batch)
    result.val_loss.append((step, value))
    log(f"warm start step {step}: validation loss {value:.4f}")
