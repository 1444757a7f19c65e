"""float32 master weights: small AdamW updates to a bf16 model accumulate instead of rounding away."""

from __future__ import annotations

import pytest
import torch

from negotiation.training.lm import MasterAdamW, TokenBatch, grpo_token_step
from tests.training.lm.bigram_lm import BigramLm

LR = 1e-5  # the recipe's floor: below half a bf16 ulp (6e-5) at weights in [2^-6, 2^-5)


def _weights(dtype: torch.dtype) -> torch.nn.Parameter:
    torch.manual_seed(0)
    start = (torch.rand(64, 32) * 0.015 + 0.016).to(torch.bfloat16)  # magnitude of a trained LM's weights
    return torch.nn.Parameter(start.to(dtype))


def _run(optimizer, param: torch.nn.Parameter, steps: int = 20) -> None:
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        optimizer.zero_grad()
        param.grad = torch.randn(param.shape, generator=g).to(param.dtype)
        optimizer.step()


def _reference() -> torch.Tensor:
    """The same steps on a float32 parameter with torch's AdamW."""
    p = _weights(torch.float32)
    _run(torch.optim.AdamW([p], lr=LR, betas=(0.9, 0.95), weight_decay=0.01), p)
    return p.detach()


def test_master_weights_track_float32_adamw_and_the_model_holds_them_rounded():
    p = _weights(torch.bfloat16)
    opt = MasterAdamW([p], lr=LR, betas=(0.9, 0.95), weight_decay=0.01)
    assert opt.keeps_copies
    _run(opt, p)
    ref = _reference()
    torch.testing.assert_close(opt.master[0], ref, rtol=0, atol=1e-6)  # bf16 grads of N(0,1): Adam's step is sign-like
    assert torch.equal(p.detach(), opt.master[0].detach().to(torch.bfloat16))
    assert not torch.equal(p.detach(), _weights(torch.bfloat16).detach())  # 20 steps of 1e-5 moved the bf16 weights


def test_plain_adamw_on_bf16_weights_loses_small_updates():
    """Why the masters exist: the same steps applied to bf16 weights directly change (almost) nothing."""
    p = _weights(torch.bfloat16)
    start = p.detach().clone()
    _run(torch.optim.AdamW([p], lr=LR, betas=(0.9, 0.95), weight_decay=0.01), p)
    moved_plain = (p.detach() != start).float().mean()
    moved_true = (_reference().to(torch.bfloat16) != start).float().mean()
    assert moved_plain < 0.05 < moved_true


def test_float32_model_uses_its_parameters_as_masters():
    p = _weights(torch.float32)
    opt = MasterAdamW([p], lr=LR, betas=(0.9, 0.95), weight_decay=0.01)
    assert not opt.keeps_copies and opt.master[0] is p
    _run(opt, p)
    torch.testing.assert_close(p.detach(), _reference(), rtol=0, atol=0)


def _Lm(vocab: int = 13) -> BigramLm:
    """A bf16 bigram LM with logits of magnitude [2^-6, 2^-5), as ``_weights``."""
    torch.manual_seed(2)
    model = BigramLm(vocab, dtype=torch.bfloat16)
    with torch.no_grad():
        model.table.weight.copy_(torch.rand(vocab, vocab) * 0.015 + 0.016)
    return model


@pytest.mark.parametrize("masters", [True, False])
def test_grpo_steps_at_a_tiny_rate_move_a_bf16_policy_only_with_masters(masters):
    model, reference = _Lm(), _Lm()
    start = model.table.weight.detach().clone()
    kw = dict(lr=LR, betas=(0.9, 0.95), weight_decay=0.0)
    opt = MasterAdamW(model.parameters(), **kw) if masters else torch.optim.AdamW(model.parameters(), **kw)
    batch = TokenBatch(ids=[[1, 2, 3, 4], [5, 6, 7]], gen_mask=[[0, 1, 1, 1], [0, 1, 1]], advantages=[1.0, -1.0])
    for _ in range(30):
        grpo_token_step(model, reference, opt, batch, lr=LR, clip_low=0.2, clip_high=0.2, kl_coef=0.04,
                        max_grad_norm=1.0, token_budget=100, pad_id=0)
    changed = int((model.table.weight.detach() != start).sum())
    if masters:  # 30 steps of ~1e-5: a few bf16 ulps (1.2e-4) on the trained rows
        assert changed > 20
    else:
        assert changed == 0


def test_a_bf16_run_at_a_tiny_rate_moves_its_checkpoints_which_hold_float32_masters(tmp_path):
    """End to end on the CPU: bf16 weights, a 1e-6 peak rate; step_0 is the base exactly and the
    last checkpoint's float32 weights moved (with plain bf16 AdamW they would not)."""
    pytest.importorskip("transformers")
    from safetensors.torch import load_file

    from negotiation.training.lm import LmArm, LmRuntime, LmTrainConfig, train_lm_arm
    from tests.training.lm.tiny_lm import canned_generator, tiny_protocol, write_tiny_checkpoint

    base = write_tiny_checkpoint(tmp_path / "base")
    cfg = LmTrainConfig(protocol=tiny_protocol(learning_rate=1e-6, lr_floor=1e-7),
                        arm=LmArm(study="tiny", arm="bf16", size="w16", base=base, lr_multiple=1.0, steps=2, seed=3),
                        runtime=LmRuntime(dtype="bfloat16", micro_batch_tokens=4096))
    train_lm_arm(cfg, tmp_path / "run", track=False, generator_factory=canned_generator)
    start, base_w = load_file(tmp_path / "run/step_0/model.safetensors"), load_file(base / "model.safetensors")
    end = load_file(tmp_path / "run/step_2/model.safetensors")
    assert all(t.dtype == torch.float32 for t in end.values())
    assert all(torch.equal(start[k], base_w[k]) for k in base_w)
    moved = [k for k in end if not torch.equal(end[k], start[k])]
    assert len(moved) == len(end)
    rounded = [k for k in end if not torch.equal(end[k].to(torch.bfloat16), start[k].to(torch.bfloat16))]
    assert len(rounded) < len(end)  # most 2e-6 moves stay inside one bf16 ulp: only the masters hold them


def test_bf16_policy_and_reference_are_the_same_numbers_at_step_zero(tmp_path):
    """Loaded by one path (buffers included), the policy's logits equal the reference's, so the KL
    of step 1 (measured before the optimizer step) is exactly 0 in bf16 on the CPU."""
    pytest.importorskip("transformers")
    import pandas as pd

    from negotiation.training.lm import LmArm, LmRuntime, LmTrainConfig, load_seller, train_lm_arm
    from tests.training.lm.tiny_lm import canned_generator, tiny_protocol, write_tiny_checkpoint

    base = write_tiny_checkpoint(tmp_path / "base")
    cfg = LmTrainConfig(protocol=tiny_protocol(),
                        arm=LmArm(study="tiny", arm="bf16", size="w16", base=base, lr_multiple=1.0, steps=1, seed=3),
                        runtime=LmRuntime(dtype="bfloat16", micro_batch_tokens=4096))
    policy = load_seller(base, cfg, canned_generator)[0]
    reference = load_seller(base, cfg, None, reference=True)[0].model
    assert next(policy.model.parameters()).dtype == torch.bfloat16
    assert all(m.dtype == torch.float32 for m in policy.masters)
    ids = torch.arange(5, 70)[None]
    policy.model.train()
    torch.testing.assert_close(policy.model(input_ids=ids).logits, reference(input_ids=ids).logits, rtol=0, atol=0)
    train_lm_arm(cfg, tmp_path / "run", track=False, generator_factory=canned_generator)
    assert pd.read_csv(tmp_path / "run" / "curves.csv")["train/kl_penalty"].iloc[0] == 0.0
