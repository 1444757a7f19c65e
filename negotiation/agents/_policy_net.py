"""The demo seller's network and its structured action distribution.

A turn is a tuple of categorical decisions ("tokens"), so log-probabilities and entropies are
exact:

- ``accept``: COUNTER (0) or ACCEPT (1); ACCEPT is masked while the ledger is empty (the engine
  would reject it as malformed). ACCEPT carries no terms: in training the engine applies terms
  attached to an ACCEPT, and a policy that learned to attach them would learn a move that
  evaluation ignores.
- on COUNTER, per term slot ``name``: leave (0) or name (1) the term;
- per named continuous slot ``value``: one of ``value_bins`` own-φ levels evenly spaced on
  [-1, 1];
- per named categorical or binary slot ``level``: one of the term's levels, scored through
  the level features (preferred / on the ledger / asked by the counterpart).

Architecture: a per-slot encoder, a context MLP over the global features and the mean slot
encoding, and a per-slot MLP over ``[slot encoding, context]`` feeding the name, value and
level heads. "Size" is the hidden width; ``depth`` is the number of hidden layers of each MLP.
"""

from __future__ import annotations

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from negotiation.protocol import PolicyWidth
from negotiation.agents._policy_features import (
    FEATURE_VERSION,
    GLOBAL_FEATURES,
    LEVEL_FEATURES,
    MAX_LEVELS,
    MAX_SLOTS,
    SLOT_FEATURES,
    FeatureBatch,
)

# One row of tokens per turn: accept, then a name, a value and a level token per slot.
N_TOKENS = 1 + 3 * MAX_SLOTS


class PolicyArch(BaseModel):
    """Shape of a policy network; stored as ``config.json`` beside the weights."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    version: int = 1
    """Version of this record."""
    width: PolicyWidth
    """Hidden width: the policy's "size" (the protocol's ``sizes.<size>.width``)."""
    depth: int = Field(default=2, ge=1, le=8)
    """Hidden layers in each of the context and per-slot MLPs."""
    value_bins: int = Field(default=11, ge=2, le=101)
    """Own-φ levels a continuous value can take, evenly spaced on [-1, 1]."""
    feature_version: int = FEATURE_VERSION
    """Feature layout the weights were trained on."""
    max_slots: int = MAX_SLOTS
    """Term slots of the layout."""
    max_levels: int = MAX_LEVELS
    """Levels per integrative slot of the layout."""


def _mlp(n_in: int, width: int, depth: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for k in range(depth):
        layers += [nn.Linear(n_in if k == 0 else width, width), nn.Tanh()]
    return nn.Sequential(*layers)


def _small_head(n_in: int, n_out: int) -> nn.Linear:
    # Near-zero output weights make the untrained policy close to uniform on every head.
    head = nn.Linear(n_in, n_out)
    with torch.no_grad():
        head.weight.mul_(0.01)
        head.bias.zero_()
    return head


class PolicyNet(nn.Module):
    """Logits of every head for a batch of feature rows."""

    def __init__(self, arch: PolicyArch):
        super().__init__()
        w = arch.width
        self.arch = arch
        self.slot_encoder = _mlp(SLOT_FEATURES, w, 1)
        self.context = _mlp(GLOBAL_FEATURES + w, w, arch.depth)
        self.per_slot = _mlp(2 * w, w, arch.depth)
        self.accept_head = _small_head(w, 2)
        self.name_head = _small_head(w, 2)
        self.value_head = _small_head(w, arch.value_bins)
        self.level_head = _small_head(w, LEVEL_FEATURES)

    def forward(self, fb: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        slot_mask = fb["slot_mask"].unsqueeze(-1).float()
        enc = self.slot_encoder(fb["slots"]) * slot_mask
        pooled = enc.sum(1) / slot_mask.sum(1).clamp(min=1.0)
        ctx = self.context(torch.cat([fb["globals"], pooled], dim=-1))
        z = self.per_slot(torch.cat([enc, ctx.unsqueeze(1).expand_as(enc)], dim=-1))
        neg = torch.finfo(ctx.dtype).min
        accept = self.accept_head(ctx)
        accept = torch.where(torch.stack([torch.ones_like(fb["accept_ok"]), fb["accept_ok"]], -1),
                             accept, neg)
        coef = self.level_head(z)
        level = torch.einsum("nsf,nslf->nsl", coef, fb["levels"])
        # A slot without levels gets one dummy allowed level so its softmax stays finite.
        level_mask = fb["level_mask"].clone()
        level_mask[..., 0] |= ~level_mask.any(-1)
        return {"accept": accept, "name": self.name_head(z), "value": self.value_head(z),
                "level": torch.where(level_mask, level, neg)}


def feature_tensors(fb: FeatureBatch) -> dict[str, torch.Tensor]:
    """Torch views of a feature batch (no copies)."""
    return {name: torch.from_numpy(getattr(fb, name)) for name in FeatureBatch.__dataclass_fields__}


def token_logits(out: dict[str, torch.Tensor]) -> list[torch.Tensor]:
    """Logits of the four heads, each ``(n, tokens_of_head, choices)``."""
    return [out["accept"].unsqueeze(1), out["name"], out["value"], out["level"]]


def token_logprobs_entropy(out: dict[str, torch.Tensor], actions: torch.Tensor
                           ) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probability of the taken choice and the head's entropy, per token: ``(n, N_TOKENS)``.

    ``actions`` is ``(n, N_TOKENS)`` int64 in token order (accept, names, values, levels);
    tokens that were not decided carry 0 and are masked by ``token_mask``.
    """
    logps, ents, start = [], [], 0
    for logits in token_logits(out):
        k = logits.shape[1]
        logp_all = torch.log_softmax(logits, dim=-1)
        taken = actions[:, start:start + k].unsqueeze(-1)
        logps.append(logp_all.gather(-1, taken).squeeze(-1))
        probs = logp_all.exp()
        ents.append(-(probs * logp_all).sum(-1))
        start += k
    return torch.cat(logps, 1), torch.cat(ents, 1)


def token_mask(fb: dict[str, torch.Tensor], actions: torch.Tensor) -> torch.Tensor:
    """Which tokens were real decisions, ``(n, N_TOKENS)`` bool.

    The accept token counts where ACCEPT was allowed; on a COUNTER, a name token per term,
    a value token per named continuous term and a level token per named integrative term.
    """
    counter = (actions[:, 0] == 0).unsqueeze(1)
    named = actions[:, 1:1 + MAX_SLOTS] == 1
    slots, cont = fb["slot_mask"], fb["continuous"]
    return torch.cat([fb["accept_ok"].unsqueeze(1), counter & slots,
                      counter & named & cont, counter & named & slots & ~cont], 1)
