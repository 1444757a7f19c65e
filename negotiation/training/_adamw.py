"""AdamW in plain torch ops, bit-identical to ``torch.optim.AdamW`` on the CPU.

Why not ``torch.optim.AdamW``: every ``torch.optim.Optimizer`` wraps ``add_param_group``,
``zero_grad`` and ``step`` in ``torch._disable_dynamo`` / ``import torch._dynamo``, so the
first optimizer call imports TorchDynamo (1.2-1.8 s of a demo training run's ~30 CPU s) for a
handful of element-wise updates. The demo trainer starts a fresh optimizer every run (a
continuation never loads optimizer state), so it needs only the update itself.

The update is torch's single-tensor path (the one ``torch.optim.AdamW`` takes for CPU fp32
tensors: no ``foreach``, no ``fused``, ``amsgrad`` and ``maximize`` off), with the same
operations in the same order on the same dtypes, so the parameters agree bit for bit
(``tests/training/test_adamw.py`` checks it against ``torch.optim.AdamW`` over many steps):

1. ``p *= 1 - lr * weight_decay`` (decoupled decay);
2. ``m.lerp_(g, 1 - beta1)``; ``v.mul_(beta2).addcmul_(g, g, value=1 - beta2)``;
3. ``p.addcdiv_(m, v.sqrt() / sqrt(1 - beta2**t) + eps, value=-lr / (1 - beta1**t))``.

The step count is kept as a Python float, as torch reads its float32 step tensor back with
``.item()`` (exact for any count below 2**24).
"""

from __future__ import annotations

from typing import Iterable

import torch

DEFAULT_EPS = 1e-8  # torch.optim.AdamW's default; the protocol's recipe states none


class PlainAdamW:
    """The subset of ``torch.optim.AdamW`` the demo trainer uses: one parameter group whose
    ``lr`` the trainer sets before each ``step``, ``zero_grad(set_to_none=True)`` and ``step``."""

    def __init__(self, params: Iterable[torch.nn.Parameter], lr: float, betas: tuple[float, float],
                 weight_decay: float, eps: float = DEFAULT_EPS):
        self.param_groups = [{"params": list(params), "lr": lr, "betas": tuple(betas),
                              "weight_decay": weight_decay, "eps": eps}]
        # Per parameter: (step count, exp_avg, exp_avg_sq), created at its first gradient as torch does.
        self.state: dict[torch.nn.Parameter, list] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                if set_to_none:
                    param.grad = None
                else:
                    param.grad.detach_().zero_()

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    self._update(param, group)

    def _update(self, param: torch.nn.Parameter, group: dict) -> None:
        lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        state = self.state.get(param)
        if state is None:
            state = self.state[param] = [0.0, torch.zeros_like(param, memory_format=torch.preserve_format),
                                         torch.zeros_like(param, memory_format=torch.preserve_format)]
        state[0] += 1.0
        step, exp_avg, exp_avg_sq = state
        grad = param.grad
        if decay != 0:
            param.mul_(1 - lr * decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1**step
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-(lr / bias_correction1))
