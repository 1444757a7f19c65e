"""``PolicyShards``: lockstep rollouts dealt out to helper processes are the bytes of the plain loop.

The reference is the loop the trainer ran before the shards (one process, ``Policy.act`` on every
running episode's view, then each buyer's reply); every number of processes must reproduce its
features, actions, row order and finished episodes exactly, and a helper's failure must surface
in the parent as an error, never as a hang or a silently shorter rollout.
"""

from __future__ import annotations

import sys
import types
from dataclasses import fields

import numpy as np
import pytest
import torch

from negotiation.agents import (
    FeatureBatch,
    Policy,
    PolicyArch,
    PolicyShards,
    concat_features,
    make_agent,
    outcome_of,
)
from negotiation.env import EnvConfig, Negotiation, load_domain, make_scenario
from negotiation.training import play
from tests.agents.refusing_buyer import RefusingBuyer

ENV = EnvConfig(max_rounds=6, no_deal_penalty=0.3, g_fmt=0.05, g_len=0.05, t_soft=3.0,
                accept_applies_terms=True, phase="training")
SPEC = "policy:test"


def _jobs(n_seeds: int = 5, buyer_specs=("scripted:boulware?e=0.2", "scripted:conceder", "scripted:titfortat")):
    buyers = [make_agent(spec, "buyer") for spec in buyer_specs]
    jobs = []
    for d, name in enumerate(("job_offer", "media_rights")):
        domain = load_domain(name)
        for k in range(n_seeds):
            jobs.append((make_scenario(domain, 100 + k, 0.3), buyers[(d + k) % len(buyers)], 7 * k + d))
    return jobs


def _policy(holds_out: bool) -> Policy:
    policy = Policy.init(PolicyArch(width=8), seed=3)
    if holds_out:  # rarely accepts: episodes run to the deadline, so the shards finish at different turns
        with torch.no_grad():
            policy.net.accept_head.bias.copy_(torch.tensor([3.0, -3.0]))
    return policy


def _plain(policy: Policy, jobs, env: EnvConfig):
    """The one-process lockstep loop: the reference."""
    games = [Negotiation(scn, env, sample_seed=seed) for scn, _, seed in jobs]
    feats, acts, rows = [], [], []
    while active := [k for k, g in enumerate(games) if not g.done]:
        if games[active[0]].next_role == "seller":
            turns = policy.act([games[k].view() for k in active])
            for k, text in zip(active, turns.texts):
                games[k].apply(text)
            feats.append(turns.features)
            acts.append(turns.actions)
            rows.append(np.asarray(active, dtype=np.int64))
        else:
            for k in active:
                games[k].apply(jobs[k][1].respond(games[k].view()))
    episodes = [g.record(SPEC, b.spec) for g, (_, b, _) in zip(games, jobs)]
    return episodes, concat_features(feats), np.concatenate(acts), np.concatenate(rows)


def _assert_same_features(a: FeatureBatch, b: FeatureBatch) -> None:
    for f in fields(FeatureBatch):
        x, y = getattr(a, f.name), getattr(b, f.name)
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), f.name


@pytest.mark.parametrize("holds_out", [False, True])
@pytest.mark.parametrize("processes", [1, 2, 3])
def test_any_number_of_processes_plays_the_plain_loops_bytes(processes, holds_out):
    policy, jobs = _policy(holds_out), _jobs()
    episodes, features, actions, rows = _plain(policy, jobs, ENV)
    with PolicyShards(processes) as shards:
        ro = play(policy, SPEC, jobs, ENV, shards)
        assert shards.records(SPEC) == episodes  # every turn, ledger and score
    _assert_same_features(ro.features, features)
    assert ro.actions.dtype == actions.dtype and np.array_equal(ro.actions, actions)
    assert np.array_equal(ro.row_episode, rows)
    assert ro.outcomes == [outcome_of(e) for e in episodes]
    assert ro.rewards.tolist() == [outcome_of(e).reward for e in episodes]


def test_one_pool_serves_many_rollouts_of_any_size():
    policy = _policy(holds_out=True)
    with PolicyShards(3) as shards:
        for jobs in (_jobs(1), _jobs(4), _jobs(1)[:1]):  # 2, 8 and 1 jobs: some shards empty
            expected, features, actions, _ = _plain(policy, jobs, ENV)
            ro = play(policy, SPEC, jobs, ENV, shards)
            assert ro.outcomes == [outcome_of(e) for e in expected]
            assert np.array_equal(ro.actions, actions)


def test_a_helpers_error_is_raised_here_and_the_pool_stays_usable():
    policy = _policy(holds_out=True)
    jobs = _jobs(2)
    refusing = [(scn, RefusingBuyer(), seed) if k == 1 else (scn, buyer, seed)
                for k, (scn, buyer, seed) in enumerate(jobs)]  # job 1 lives in the helper
    with PolicyShards(2) as shards:
        with pytest.raises(ValueError, match="buyer refused at turn 4"):
            play(policy, SPEC, refusing, ENV, shards)
        # Every reply was read: the next rollout is not answered with a stale one.
        expected, *_ = _plain(policy, jobs, ENV)
        assert play(policy, SPEC, jobs, ENV, shards).outcomes == [outcome_of(e) for e in expected]


def test_a_job_that_cannot_be_pickled_is_an_error_here_and_nothing_is_sent():
    class LocalBuyer(RefusingBuyer):  # a class in a function's scope: pickle cannot name it
        pass

    policy, jobs = _policy(holds_out=False), _jobs(1)
    with PolicyShards(2) as shards:
        with pytest.raises(AttributeError, match="Can't pickle local object"):
            play(policy, SPEC, [(scn, LocalBuyer(), seed) for scn, _, seed in jobs], ENV, shards)
        expected, *_ = _plain(policy, jobs, ENV)
        assert play(policy, SPEC, jobs, ENV, shards).outcomes == [outcome_of(e) for e in expected]


def test_a_request_the_helper_cannot_read_is_an_error_not_a_hang(monkeypatch):
    phantom = types.ModuleType("phantom_buyers")  # importable here only

    class PhantomBuyer(RefusingBuyer):
        pass

    PhantomBuyer.__module__, PhantomBuyer.__qualname__ = "phantom_buyers", "PhantomBuyer"
    phantom.PhantomBuyer = PhantomBuyer
    monkeypatch.setitem(sys.modules, "phantom_buyers", phantom)
    jobs = [(scn, PhantomBuyer(), seed) for scn, _, seed in _jobs(1)]
    with PolicyShards(2) as shards:
        with pytest.raises(RuntimeError, match=r"rollout helper could not read a request "
                                               r"\(ModuleNotFoundError: No module named 'phantom_buyers'\)"):
            play(_policy(holds_out=False), SPEC, jobs, ENV, shards)
        with pytest.raises(RuntimeError, match="rollout helper process exited with code 0"):
            play(_policy(holds_out=False), SPEC, _jobs(1), ENV, shards)  # it stopped: nothing runs on


def test_a_dead_helper_is_an_error_naming_its_exit_code():
    policy = _policy(holds_out=False)
    with PolicyShards(2) as shards:
        helper = shards._helpers[0]
        helper.proc.kill()
        helper.proc.wait()
        with pytest.raises(RuntimeError, match="rollout helper process exited with code -9"):
            play(policy, SPEC, _jobs(2), ENV, shards)


def test_close_stops_the_helpers_and_processes_must_be_positive():
    with PolicyShards(3) as shards:
        procs = [h.proc for h in shards._helpers]
        assert shards.processes == 3 and all(p.poll() is None for p in procs)
    assert all(p.poll() == 0 for p in procs)  # end of requests: each helper exits cleanly
    with pytest.raises(ValueError, match="processes must be at least 1, got 0"):
        PolicyShards(0)
