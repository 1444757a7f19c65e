"""protocol/demo/: the paper's design in miniature (DESIGN.md "Studies")."""

from __future__ import annotations

from collections import Counter

import pytest

from negotiation.agents import make_agent, parse_spec
from negotiation.protocol import fill_seller
from negotiation.study import load_study


@pytest.fixture(scope="module")
def demo():
    return load_study("demo")


def test_four_policy_widths_each_with_base_shared_and_3x_arms(demo):
    widths = {name: size.width for name, size in demo.protocol.sizes.items()}
    assert len(widths) == 4 and all(size.kind == "policy" for size in demo.protocol.sizes.values())
    per_size = Counter((arm.size, arm.kind, arm.lr_multiple, arm.parent_run is not None) for arm in demo.arms.values())
    for size in widths:
        assert per_size[(size, "base", None, False)] == 1
        assert per_size[(size, "trained", 1, False)] == 1  # shared-LR initial run
        assert per_size[(size, "trained", 1, True)] == 1  # its continuation
        assert per_size[(size, "trained", 3, False)] == 1


def test_10x_arm_only_at_the_smallest_width_and_two_scripted_references(demo):
    smallest = min(demo.protocol.sizes, key=lambda k: demo.protocol.sizes[k].width)
    assert [a.size for a in demo.arms.values() if a.lr_multiple == 10] == [smallest]
    refs = [a.seller for a in demo.arms.values() if a.kind == "reference"]
    assert len(refs) == 2 and all(parse_spec(s).kind == "scripted" for s in refs)


def test_read_points_step_match_the_early_arms_and_continuations_reach_combined_steps(demo):
    recipe = demo.protocol.training
    early = {demo.read_step(n) for n, a in demo.arms.items() if a.kind == "trained" and a.parent_run is None}
    late = {demo.read_step(n) for n, a in demo.arms.items() if a.parent_run is not None}
    (step,) = early  # initial-run arms (shared, 3x, 10x) all read at one step, step-matched
    assert step <= recipe.initial_steps and late == {recipe.combined_steps}


def test_one_family_training_pool_mixed_80_20_and_two_held_out_buyers(demo):
    buyers = demo.protocol.buyers
    assert sorted(b.weight for b in buyers.training) == [0.2, 0.8]
    families = {b.family for b in buyers.training}
    assert len(families) == 1
    eval_families = sorted(b.family in families for b in buyers.evaluation.values())
    assert eval_families == [False, True]  # one shares the pool's family, one does not
    pool = {b.spec for b in buyers.training}
    assert not pool & {b.spec for b in buyers.evaluation.values()}


def test_used_car_held_out_and_144_paired_episodes_per_arm(demo):
    p = demo.protocol
    assert p.domains.held_out == ("used_car",) and len(p.domains.training) == 8
    assert p.evaluation.episodes_per_arm == 9 * 8 * 2 == 144
    assert p.seeds.evaluation.start >= 5_000_000 > p.seeds.training.stop - 1
    assert not p.seed_overlaps()


def test_every_scripted_spec_builds_an_agent(demo):
    p = demo.protocol
    specs = [b.spec for b in p.buyers.training] + [b.spec for b in p.buyers.evaluation.values()]
    specs += [a.seller for a in demo.arms.values() if a.kind == "reference"]
    for spec in specs:
        assert make_agent(spec, "buyer") is not None


def test_policy_sellers_are_filled_from_the_size_and_the_selected_checkpoint(demo):
    base = demo.arms["w16_base"]
    assert fill_seller(base.seller, base=demo.protocol.sizes["w16"].checkpoint) == "policy:outputs/demo/init/w16"
    trained = demo.arms["w16_lr3x"]
    assert fill_seller(trained.seller, checkpoint="runs/w16_lr3x/step_56") == "policy:runs/w16_lr3x/step_56"
    with pytest.raises(KeyError, match="checkpoint"):
        fill_seller(trained.seller, base="x")


def test_the_policy_warm_start_errors_name_file_key_and_value(root, edit):
    """``policy_warm_start``: its corpus fits the training block, and only policy sizes use it."""
    from negotiation.errors import ConfigError
    from negotiation.study import load_study

    demo = root / "protocol/demo/protocol.yaml"
    edit(demo, "  seeds_per_domain: 8 ", "  seeds_per_domain: 6000 ")
    with pytest.raises(ConfigError, match=r"protocol/demo/protocol.yaml:policy_warm_start.seeds_per_domain: 6000 "
                                          r"exceeds seeds.training"):
        load_study("demo", root)
    edit(demo, "  seeds_per_domain: 6000 ", "  seeds_per_domain: 0 ")
    with pytest.raises(ConfigError, match="policy_warm_start.seeds_per_domain: Input should be greater than 0"):
        load_study("demo", root)
    paper = root / "protocol/paper/protocol.yaml"
    warm = demo.read_text(encoding="utf-8").split("\npolicy_warm_start:", 1)[1].split("\n\n", 1)[0]
    paper.write_text(paper.read_text(encoding="utf-8") + "policy_warm_start:" + warm.replace(": 0 ", ": 8 ") + "\n",
                     encoding="utf-8")
    with pytest.raises(ConfigError, match="policy_warm_start: only policy sizes use it"):
        load_study("paper", root)
