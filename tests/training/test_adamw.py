"""PlainAdamW against torch.optim.AdamW, the plain reference: bitwise-equal parameters."""

from __future__ import annotations

import subprocess
import sys

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from negotiation.training._adamw import PlainAdamW


def _params(shapes: list[tuple[int, ...]], seed: int) -> list[torch.nn.Parameter]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(shape, generator=gen)) for shape in shapes]


def _run(make_optimizer, shapes, seed: int, lrs: list[float]) -> list[torch.Tensor]:
    params = _params(shapes, seed)
    optimizer = make_optimizer(params)
    gen = torch.Generator().manual_seed(seed + 1)
    for step, lr in enumerate(lrs):
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad(set_to_none=True)
        # A parameter that gets no gradient on some steps keeps its state and count untouched.
        for k, param in enumerate(params):
            if (step + k) % 5 != 3:
                param.grad = torch.randn(param.shape, generator=gen) * 10 ** ((step % 7) - 3)
        optimizer.step()
    return [p.detach().clone() for p in params]


shapes = st.lists(st.lists(st.integers(1, 9), min_size=0, max_size=3).map(tuple), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(shapes=shapes, seed=st.integers(0, 2**16), steps=st.integers(1, 40),
       lr=st.floats(1e-6, 1.0), beta1=st.floats(0.0, 0.999), beta2=st.floats(0.5, 0.99999),
       weight_decay=st.sampled_from([0.0, 0.01, 0.1, 0.3]), eps=st.sampled_from([1e-8, 1e-6]))
def test_plain_adamw_is_bitwise_torch_adamw(shapes, seed, steps, lr, beta1, beta2, weight_decay, eps):
    lrs = [lr * (1 + (k % 3)) / 3 for k in range(steps)]  # the trainer changes the LR every step
    ours = _run(lambda ps: PlainAdamW(ps, lr=lr, betas=(beta1, beta2), weight_decay=weight_decay, eps=eps),
                shapes, seed, lrs)
    ref = _run(lambda ps: torch.optim.AdamW(ps, lr=lr, betas=(beta1, beta2), weight_decay=weight_decay, eps=eps),
               shapes, seed, lrs)
    for a, b in zip(ours, ref):
        assert torch.equal(a, b) and a.view(-1).view(torch.int32).equal(b.view(-1).view(torch.int32))


def test_plain_adamw_does_not_import_dynamo():
    code = ("import sys, torch\n"
            "from negotiation.training._adamw import PlainAdamW\n"
            "p = torch.nn.Parameter(torch.ones(3)); o = PlainAdamW([p], lr=0.1, betas=(0.9, 0.99), weight_decay=0.1)\n"
            "p.sum().backward(); torch.nn.utils.clip_grad_norm_([p], 1.0); o.step(); o.zero_grad()\n"
            "assert 'torch._dynamo' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)
