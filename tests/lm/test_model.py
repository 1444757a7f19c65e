"""The model ladder: shapes from the protocol, seeded weights, Hugging Face folders that load."""

from __future__ import annotations

import json
import shutil

import pytest

from negotiation.ladder import write_base
from negotiation.lm import build_model, count_parameters, load_tokenizer, save_checkpoint
from negotiation.study import load_study
from tests.conftest import tiny_lm_protocol

HF_FILES = {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json",
            "tokenizer_config.json", "chat_template.jinja"}


def test_sizes_span_thirty_times_in_parameters(tiny_lm):
    protocol = load_study("lm").protocol
    tokenizer = load_tokenizer(tiny_lm)
    small = [n for n, s in protocol.sizes.items() if s.kind == "lm" and s.hidden_size <= 256]
    counts = {n: count_parameters(build_model(protocol.sizes[n], tokenizer, vocab_size=4096)) for n in small}
    assert counts == dict(sorted(counts.items(), key=lambda kv: kv[1]))  # the ladder is ordered
    # The big rungs are counted from their shapes (building them costs seconds of CPU).
    xl = protocol.sizes["lm_xl"]
    mlp_attention = xl.num_layers * (3 * xl.hidden_size * xl.intermediate_size
                                     + 2 * xl.hidden_size * xl.hidden_size
                                     + 2 * xl.hidden_size * xl.num_kv_heads * xl.head_dim)
    assert mlp_attention / counts["lm_xs"] > 30


def test_checkpoint_folder_is_hf_format_and_loads_offline(tiny_lm):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    assert HF_FILES <= {p.name for p in tiny_lm.iterdir()}
    config = json.loads((tiny_lm / "config.json").read_text())
    assert config["architectures"] == ["Gemma3ForCausalLM"] and config["head_dim"] == 64
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_lm), local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(str(tiny_lm), local_files_only=True)
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Open."}], tokenize=False,
                                           add_generation_prompt=True, enable_thinking=False)
    inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
    out = model.generate(**inputs, max_new_tokens=4, do_sample=False)
    assert out.shape[1] <= inputs["input_ids"].shape[1] + 4
    assert model.generation_config.eos_token_id == [tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<eos>")]


def test_same_seed_same_bytes_other_seed_other_weights(tiny_lm, tmp_path):
    protocol = tiny_lm_protocol()
    tokenizer_dir = tiny_lm.parent / "tokenizer"
    write_base(protocol, "lm_xs", tokenizer_dir, tmp_path / "again", steps=0)
    for name in HF_FILES:
        assert (tmp_path / "again" / name).read_bytes() == (tiny_lm / name).read_bytes(), name
    tokenizer = load_tokenizer(tokenizer_dir)
    other = build_model(protocol.sizes["lm_xs"], tokenizer, vocab_size=4096, seed=1)
    save_checkpoint(other, tokenizer, tmp_path / "other")
    assert (tmp_path / "other" / "model.safetensors").read_bytes() != (tiny_lm / "model.safetensors").read_bytes()


@pytest.mark.slow
def test_warm_start_lowers_the_validation_loss_and_is_deterministic(tiny_lm, tmp_path):
    protocol = tiny_lm_protocol()
    tokenizer_dir = tmp_path / "tokenizer"
    shutil.copytree(tiny_lm.parent / "tokenizer", tokenizer_dir)
    runs = [write_base(protocol, "lm_xs", tokenizer_dir, tmp_path / f"run{i}", log=lambda _: None) for i in range(2)]
    (first, v0), (last, v1) = runs[0]["val_loss"][0], runs[0]["val_loss"][-1]
    assert (first, last) == (0, 2) and v1 < v0
    assert runs[0] == runs[1]
    assert (tmp_path / "run0/model.safetensors").read_bytes() == (tmp_path / "run1/model.safetensors").read_bytes()
