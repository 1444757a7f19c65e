"""The lm study's ladder sections: one rule per constant, each error naming file, key and value."""

from __future__ import annotations

from pathlib import Path

import pytest

from negotiation.errors import ConfigError
from negotiation.study import load_study

PROTOCOL = "protocol/lm/protocol.yaml"
XS = ("  lm_xs: {kind: lm, family: gemma3, hidden_size: 64, num_layers: 2, num_heads: 1, num_kv_heads: 1, "
      "head_dim: 64,")


def _error(root: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_study("lm", root)
    return str(info.value)


def test_the_lm_study_loads_with_a_ladder_spanning_thirty_times():
    protocol = load_study("lm").protocol
    sizes = [s for s in protocol.sizes.values() if s.kind == "lm"]
    assert {s.profile for s in sizes} == {"cpu", "gpu"} and len(sizes) >= 4


@pytest.mark.parametrize(("old", "new", "expected"), [
    (XS, XS.replace("head_dim: 64", "head_dim: 16"), "sizes.lm_xs.lm: Value error, head_dim 16 is not one"),
    (XS, XS.replace("hidden_size: 64", "hidden_size: 96"), "num_heads 1 * head_dim 64 != hidden_size 96"),
    (XS, XS.replace("num_kv_heads: 1", "num_kv_heads: 2"), "num_kv_heads 2 does not divide num_heads 1"),
    (XS, XS.replace("family: gemma3", "family: gpt2"), "sizes.lm_xs.lm.family: Input should be 'gemma3' or 'llama'"),
    ("  vocab_size: 4096", "  vocab_size: 100", f"{PROTOCOL}:tokenizer.vocab_size: Input should be greater than"),
    ("  warmup_steps: 3\n", "  warmup_steps: 240\n", "warm_start: Value error, warmup_steps 240 must be below steps 240"),
    ("    train_seeds_per_domain: 24", "    train_seeds_per_domain: 4999",
     f"{PROTOCOL}:warm_start.corpus: train + validation seeds per domain (5001) exceed seeds.training (5000)"),
    ('    sellers: ["scripted:boulware",', '    sellers: ["boulware",', "warm_start.corpus.sellers.0:"),
    ("    prompt_variants: [evaluation, training]", "    prompt_variants: [chat]", "prompt_variants.0:"),
])
def test_ladder_errors_name_file_key_and_value(root, edit, old, new, expected):
    edit(root / PROTOCOL, old, new)
    assert expected in _error(root)


def test_ladder_sections_exist_exactly_with_lm_sizes(root, edit):
    text = (root / PROTOCOL).read_text(encoding="utf-8")
    start = text.index("\ntokenizer:")
    (root / PROTOCOL).write_text(text[:start] + text[text.index("\n\n", start):], encoding="utf-8")
    assert f"{PROTOCOL}:tokenizer: required by the lm sizes" in _error(root)
    demo = root / "protocol/demo/protocol.yaml"
    demo.write_text(demo.read_text(encoding="utf-8") + "tokenizer: {vocab_size: 4096}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="tokenizer: only lm sizes use it"):
        load_study("demo", root)
