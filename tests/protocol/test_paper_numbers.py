"""protocol/paper/ against the numbers the paper states (§3-4, Appendices C, H, K, Tables 1, 4, 8).

By design this is the only place those numbers are typed a second time: the YAML is the source
the code reads, and this test is the check that the YAML says what the paper says.
"""

from __future__ import annotations

import pytest

from negotiation.study import load_study
from negotiation.registry import load_registry


@pytest.fixture(scope="module")
def paper():
    return load_study("paper")


def test_environment_and_reward_constants_of_section_3(paper):
    env = paper.protocol.environment
    assert env.max_rounds == 12  # T = 12 rounds, 24 turns
    assert env.no_deal_penalty == 0.3  # λ
    assert (env.g_fmt, env.g_len) == (0.05, 0.05)
    assert env.t_soft == pytest.approx(9.0)  # t_soft = 0.75 T
    assert env.dirichlet_alpha == 0.3
    assert (env.accept_terms_applied.training, env.accept_terms_applied.evaluation) == (True, False)
    assert env.converge_from_turn == 16


def test_domains_buyers_and_seed_blocks_of_section_4(paper):
    p = paper.protocol
    assert len(p.domains.training) == 8 and p.domains.held_out == ("used_car",)
    assert {"acquisition", "job_offer", "partnership_dissolution", "media_rights"} <= set(p.domains.training)
    pool = {b.spec: b.weight for b in p.buyers.training}
    assert pool == {"litellm:openai/gpt-5.4-mini": 0.8, "litellm:openai/gpt-5.5": 0.2}
    assert {b.spec for b in p.buyers.evaluation.values()} == {
        "litellm:anthropic/claude-sonnet-5", "litellm:openai/gpt-5.6-terra"}
    assert p.seeds.training.stop <= 5000 and p.seeds.evaluation.start >= 5_000_000
    assert p.seeds.evaluation.start >= 1000 * p.seeds.training.stop  # three orders of magnitude above


def test_sampling_as_sent_appendix_a_and_h(paper):
    s = paper.protocol.sampling
    assert (s.self_served_seller.temperature, s.self_served_seller.top_p, s.self_served_seller.top_k) == (1.0, 0.95, 64)
    assert s.self_served_seller.thinking is False
    assert s.reference_seller.temperature == 0.7
    assert s.buyer.temperature == 1.0


def test_recipe_of_appendix_h(paper):
    r = paper.protocol.training
    assert (r.algorithm, r.baseline, r.normalize_rewards) == ("grpo", "leave_one_out", True)
    assert (r.group_size, r.scenarios_per_step, r.episodes_per_step) == (8, 16, 128)
    assert (r.initial_steps, r.combined_steps) == (64, 104)
    assert r.initial_steps * r.episodes_per_step == 8192 and r.combined_steps * r.episodes_per_step == 13312
    assert (r.learning_rate, r.lr_floor, r.warmup_steps) == (1e-6, 1e-7, 5)
    assert (3 * r.lr_floor, 10 * r.lr_floor) == pytest.approx((3e-7, 1e-6))  # floors of the 3x and 10x arms
    assert (r.schedule, r.continuation_schedule) == ("warmup_cosine", "restart")
    assert r.optimizer.name == "fused_adam" and r.optimizer.betas == (0.9, 0.95)
    assert (r.optimizer.weight_decay, r.optimizer.precision) == (0.01, "bf16")
    assert (r.kl.coefficient, r.kl.estimator, r.kl.applied_to) == (0.04, "k3", "loss")
    assert (r.clip.low, r.clip.high, r.loss_level) == (0.2, 0.2, "token")
    assert (r.validate_at_step_zero, r.validation_every, r.checkpoint_every) == (True, 8, 8)
    assert (r.sequences.context_tokens, r.sequences.prompt_tokens, r.sequences.new_tokens_per_turn) == (16384, 2048, 768)
    assert r.rollout_turns == 13 and r.reward_plumbing == "front_loaded_floor" and r.seeds_per_arm == 1


def test_table_8_per_size_settings(paper):
    sizes = paper.protocol.sizes
    want = {  # effective, total, train TP, micro-batch, generation memory fraction, eval accelerators
        "e2b": (2.3, 5.1, 1, 1, 0.45, 1), "e4b": (4.5, 8.0, 1, 1, 0.40, 1),
        # App. K: the protocol froze 31B serving on two accelerators; the four of Table 8 are deviation 17.
        "12b": (11.95, 11.95, 1, 1, 0.35, 1), "31b": (30.7, 30.7, 4, 1, 0.30, 2),
    }
    got = {k: (s.effective_params_b, s.total_params_b, s.train_tensor_parallel, s.train_micro_batch,
               s.generation_memory_fraction, s.eval_accelerators) for k, s in sizes.items()}
    assert got == want
    assert {s.accelerator_memory_gb for s in sizes.values()} == {48}


def test_evaluation_design_and_statistics(paper):
    p = paper.protocol
    ev, st = p.evaluation, p.statistics
    assert (ev.seeds_per_domain, ev.episodes_per_arm, ev.held_out_episodes_per_arm) == (64, 1152, 128)
    assert ev.max_error_rows == 0 and ev.pairing_key == ("domain", "seed", "buyer")
    assert (st.resamples, st.cluster, st.interval, st.confidence, st.alpha) == (10000, "seed", "percentile", 0.95, 0.05)
    assert (st.correction, st.p_values, st.non_primary_label) == ("holm", "bootstrap", "exploratory")
    assert (st.monte_carlo.band, st.monte_carlo.rerun_resamples) == (0.001, 100_000)
    assert {(c.arm, c.reference) for c in st.primary_family} == {
        (f"{s}_shared_104", f"{s}_base") for s in ("e2b", "e4b", "12b", "31b")}


def test_guards_pilot_gate_and_doubling_rule(paper):
    p = paper.protocol
    assert p.guards.hand_read.transcripts_per_domain_family == 5
    assert p.pilot_gate.max_bad_parses == 0
    d = p.held_out_doubling
    assert (d.trigger_size, d.factor, d.retake, d.applies_to) == ("31b", 2, False, "frozen_arms_and_all_buyers")


def test_frozen_matrix_is_ten_arms_and_registry_adds_the_other_eleven_of_table_4(paper):
    kinds = sorted(a.kind for a in paper.frozen_arms.values())
    assert kinds == ["base"] * 4 + ["reference"] * 2 + ["trained"] * 4
    assert {paper.read_step(n) for n, a in paper.frozen_arms.items() if a.kind == "trained"} == {104}
    assert {a.seller for a in paper.arms.values() if a.kind == "reference"} == {
        "litellm:anthropic/claude-sonnet-5", "litellm:openai/gpt-5.6-terra"}
    added = load_registry("paper").added
    assert len(added) == 11 and len(paper.frozen_arms) + len(added) == 21 and len(paper.arms) == 21
    by_lr = sorted((a.size, a.lr_multiple) for a in added.values() if a.lr_multiple != 1)
    assert by_lr == [("12b", 3), ("31b", 3), ("e2b", 3), ("e2b", 10), ("e4b", 3), ("e4b", 3)]
    intermediate = sorted(n for n, a in added.items() if a.lr_multiple == 1)
    assert intermediate == ["12b_shared_64", "31b_shared_40", "31b_shared_56", "e2b_shared_64", "e4b_shared_56"]
