"""``params.yaml: training.backend`` picks the paper's LLM trainer; bad values name the key."""

from __future__ import annotations

import pytest

from negotiation.errors import ConfigError
from negotiation.pipeline._train import training_backend


def test_backend_defaults_to_nemo_and_reads_params(tmp_path):
    params = tmp_path / "params.yaml"
    assert training_backend(params) == "nemo"
    params.write_text("training:\n  backend: token\n", encoding="utf-8")
    assert training_backend(params) == "token"


def test_unknown_backend_names_file_key_and_value(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("training:\n  backend: megatron\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"params.yaml:training.backend: .*'megatron'"):
        training_backend(params)


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_init_warm_starts_on_the_machines_gpu_as_train_does(device, tmp_path, monkeypatch):
    import negotiation.ladder
    import negotiation.pipeline._train as train
    from negotiation.pipeline import run_init

    calls = []
    monkeypatch.setattr(train, "_stage_device", lambda: device)
    monkeypatch.setattr(negotiation.ladder, "write_base", lambda *a, **k: calls.append(k))
    run_init("lm", "lm_m", tmp_path / "lm_m")
    assert calls == [{"device": device}]
