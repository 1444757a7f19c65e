"""Loading protocol/<study>/: every bad input is a ConfigError reading ``file:key: reason``."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from negotiation.errors import ConfigError
from negotiation.protocol import load_yaml
from negotiation.study import load_study
from negotiation.protocol._schema_env import SeedBlock

PROTOCOL = "protocol/demo/protocol.yaml"
ARMS = "protocol/demo/arms.yaml"


def _error(root: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_study("demo", root)
    return str(info.value)


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("  converge_from_turn: 16", "  converge_from_turn: 16\n  turn_cap: 24",
     f"{PROTOCOL}:environment.turn_cap: Extra inputs are not permitted"),
    ("  max_rounds: 12 ", "  max_rounds: twelve ", f"{PROTOCOL}:environment.max_rounds: Input should be a valid integer"),
    ('{spec: "scripted:boulware?e=0.2"', '{spec: "boulware e=0.2"', f"{PROTOCOL}:buyers.training.0.spec:"),
    ("family: time_dependent, weight: 0.8}", "family: time_dependent, weight: 0.7}", "weights sum to"),
    ("  episodes_per_arm: 144 ", "  episodes_per_arm: 145 ", f"{PROTOCOL}:evaluation.episodes_per_arm: 145 != 144"),
    ("{arm: w16_shared_cont, reference: w16_base}", "{arm: w16_shared_cont, reference: w16_nope}",
     f"{PROTOCOL}:statistics.primary_family.0.reference: 'w16_nope' is not an arm"),
    ("study: demo\ntitle", "study: paper\ntitle", f"{PROTOCOL}:study: 'paper' differs from the folder name 'demo'"),
])
def test_protocol_file_errors_name_file_key_and_value(root, edit, old, new, expected):
    edit(root / PROTOCOL, old, new)
    assert expected in _error(root)


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("    size: w16\n    lr_multiple: 3", "    size: w99\n    lr_multiple: 3", f"{ARMS}:arms.w16_lr3x.size: unknown size 'w99'"),
    ("    run: w16_lr3x\n", "", f"{ARMS}:arms.w16_lr3x: Value error, a trained arm needs ['run']"),
    ("    lr_multiple: 3\n    run: w16_lr3x\n    read_point: early",
     "    lr_multiple: 3\n    run: w16_lr3x\n    read_point: late", f"{ARMS}:arms.w16_lr3x.read_point: unknown read point 'late'"),
    ('    seller: "scripted:boulware"', '    seller: "scripted:boulware?e"', f"{ARMS}:arms.ref_boulware:"),
    ("  w16_lr3x:", "  W16-lr3x:", f"{ARMS}:arms.W16-lr3x.[key]:"),
])
def test_arm_matrix_errors_name_file_and_arm(root, edit, old, new, expected):
    edit(root / ARMS, old, new)
    assert expected in _error(root)


def test_a_third_evaluation_buyer_is_an_error_not_a_silently_dropped_buyer_split(root, edit):
    edit(root / PROTOCOL, '    titfortat: {spec: "scripted:titfortat", family: tit_for_tat}',
         '    titfortat: {spec: "scripted:titfortat", family: tit_for_tat}\n'
         '    conceder_e1: {spec: "scripted:conceder?e=1.0", family: time_dependent}')
    assert (f"{PROTOCOL}:buyers.evaluation: the buyer split compares one evaluation buyer of a training family "
            "with one of another family; got ['boulware_e05', 'conceder_e1'] and ['titfortat']") in _error(root)


def test_a_read_point_must_be_a_checkpoint_step(root, edit):
    edit(root / "protocol/paper/protocol.yaml", "    initial: 64", "    initial: 60")
    with pytest.raises(ConfigError, match=r"protocol/paper/protocol.yaml:training: Value error, read_points.initial = 60"):
        load_study("paper", root)


def test_malformed_yaml_names_file_and_line(root):
    (root / PROTOCOL).write_text("version: 1\nstudy: [demo\n", encoding="utf-8")
    message = _error(root)
    assert message.startswith(f"{PROTOCOL}:line ") and "invalid YAML" in message


def test_duplicate_key_is_rejected_not_silently_overwritten(root, edit):
    edit(root / PROTOCOL, "  g_len: 0.05", "  g_len: 0.05\n  g_len: 0.5")
    message = _error(root)
    assert message.startswith(f"{PROTOCOL}:environment: line ") and "duplicate key 'g_len'" in message


def test_each_named_domain_file_must_exist(root):
    (root / "protocol" / "domains" / "used_car.yaml").unlink()
    assert f"{PROTOCOL}:domains.held_out.0: no domain file protocol/domains/used_car.yaml" in _error(root)


def test_unknown_study_lists_known_ones(root):
    with pytest.raises(ConfigError, match=r"protocol/nope:<study>: no study 'nope'; known: \['demo', 'lm', 'paper'\]"):
        load_study("nope", root)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_reading_arbitrary_text_gives_a_mapping_or_a_config_error(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("yaml") / "any.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        data = load_yaml(path)
    except ConfigError as exc:
        assert str(exc).startswith(f"{path}:")
    else:
        assert isinstance(data, dict)


@given(st.integers(0, 50), st.integers(1, 20), st.integers(0, 50), st.integers(1, 20))
def test_seed_block_overlap_matches_set_intersection(a, len_a, b, len_b):
    block_a, block_b = SeedBlock(start=a, stop=a + len_a), SeedBlock(start=b, stop=b + len_b)
    expected = bool(set(block_a.seeds()) & set(block_b.seeds()))
    assert block_a.overlaps(block_b) == block_b.overlaps(block_a) == expected


def test_a_continuing_arm_defines_its_parent_run_as_an_initial_run_of_its_own():
    study = load_study("demo")
    cont = study.arms["w16_shared_cont"]
    assert cont.defining("w16_shared_cont") is cont
    parent = cont.defining("w16_shared_init")
    assert (parent.run, parent.parent_run, parent.size, parent.lr_multiple) == ("w16_shared_init", None, "w16", 1)
    with pytest.raises(ValueError, match="does not define run 'w16_lr3x'"):
        cont.defining("w16_lr3x")
    with pytest.raises(ValueError, match="does not define run"):
        study.arms["w16_base"].defining("w16_shared_init")
