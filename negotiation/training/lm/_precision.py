"""AdamW on float32 master weights for a model held in a lower precision (bf16).

A bf16 weight has 8 significant bits: an update smaller than about 2^-9 of the weight rounds
away entirely. At the recipe's rates (1e-4 peak, 1e-5 floor) and weights of magnitude ~0.02, most
AdamW steps on bf16 weights change nothing (seen on the H200: validation S identical after 4
steps). The paper's optimizer avoids that: Transformer Engine's FusedAdam with
``master_weights: true, store_param_remainders: true`` keeps, beside each bf16 weight, the 16
low bits of its float32 value, i.e. an exact float32 master copy.

``MasterAdamW`` does the same with torch's AdamW: it updates float32 copies of the trainable
parameters and writes each back rounded to the model's dtype after every step, so the model runs
(generation, forward, backward) in its own precision while small updates accumulate in float32.
Moments are float32 (torch's AdamW keeps them in the master's dtype; the paper's are bf16).
Gradients are formed and accumulated over micro-batches in the model's dtype and cast to float32
before the step. For a float32 model the masters are the parameters themselves (no copy).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import torch

__all__ = ["MasterAdamW"]


class MasterAdamW:
    """AdamW whose state and updates live in float32, whatever the model's dtype.

    Exposes what a training step needs of a torch optimizer: ``param_groups`` (the ``lr`` is set
    there), ``zero_grad``, ``step``, ``state_dict``.

    Args:
        params: the model's trainable parameters (any float dtype, on any device).
        lr, betas, weight_decay: AdamW's.
        start: float32 values to start the masters from (e.g. the checkpoint's, before the model
            was cast to bf16); default the parameters' own values.
    """

    def __init__(self, params: Iterable[torch.nn.Parameter], *, lr: float, betas: tuple[float, float],
                 weight_decay: float, start: Sequence[torch.Tensor] | None = None):
        self.params = [p for p in params if p.requires_grad]
        if start is not None and [tuple(s.shape) for s in start] != [tuple(p.shape) for p in self.params]:
            raise ValueError("MasterAdamW start: one float32 tensor per trainable parameter, in order, of its shape")
        self.master = [p if p.dtype == torch.float32 else
                       (p.detach().float() if start is None else start[i].detach().float()).clone().requires_grad_(True)
                       for i, p in enumerate(self.params)]
        self.inner = torch.optim.AdamW(self.master, lr=lr, betas=tuple(betas), weight_decay=weight_decay)

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return self.inner.param_groups

    @property
    def keeps_copies(self) -> bool:
        """Whether any parameter has a separate float32 master (the model is not float32)."""
        return any(m is not p for p, m in zip(self.params, self.master))

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p, m in zip(self.params, self.master):
            p.grad = None
            m.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """Cast the model's gradients to the masters, take the AdamW step there, write the
        masters back into the model's parameters (rounded to their dtype)."""
        for p, m in zip(self.params, self.master):
            if m is not p:
                m.grad = None if p.grad is None else p.grad.to(torch.float32)
        self.inner.step()
        for p, m in zip(self.params, self.master):
            if m is not p:
                p.copy_(m)

    def state_dict(self) -> dict[str, Any]:
        return self.inner.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore moments and step counts saved by ``state_dict`` (an exact resume); the masters
        themselves come from the checkpoint's float32 weights."""
        self.inner.load_state_dict(state)
