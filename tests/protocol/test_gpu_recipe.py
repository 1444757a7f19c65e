"""``gpu_training``: the recipe of GPU-profile sizes, on the same step grid as ``training``."""

from __future__ import annotations

from types import SimpleNamespace

from negotiation.study import load_study


def _with_gpu(**changes):
    protocol = load_study("demo").protocol
    gpu = protocol.training.model_copy(update={"scenarios_per_step": 16, "episodes_per_step": 128, **changes})
    sizes = {**protocol.sizes, "big": SimpleNamespace(kind="lm", profile="gpu")}
    return protocol.model_copy(update={"gpu_training": gpu, "sizes": sizes})


def test_gpu_sizes_read_the_gpu_recipe_others_the_shared_one():
    protocol = _with_gpu()
    assert protocol.recipe_for("big").scenarios_per_step == 16
    assert protocol.recipe_for("w16") is protocol.training
    plain = load_study("demo").protocol
    assert plain.recipe_for("w16") is plain.training
