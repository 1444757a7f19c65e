"""The stand-in reads back exactly what the evaluation scaffold rendered (property test)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.evaluation.helpers import ENV

from negotiation.agents import make_agent
from negotiation.env import Negotiation, load_domains, make_scenario, render_messages
from negotiation.evaluation import PromptReadError, read_view

DOMAINS = sorted(load_domains())
GARBAGE = "Let me think about it. {not an action"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(domain=st.sampled_from(DOMAINS), seed=st.integers(0, 10**7), n_turns=st.integers(0, 9),
       garbage_at=st.integers(0, 12), persona=st.sampled_from(["boulware", "conceder", "titfortat", "fixed"]))
def test_read_view_recovers_role_domain_prefs_turn_history_and_ledger(domain, seed, n_turns, garbage_at, persona):
    scenario = make_scenario(load_domains()[domain], seed)
    game = Negotiation(scenario, ENV)
    agents = {"seller": make_agent(f"scripted:{persona}", "seller"), "buyer": make_agent("scripted:titfortat", "buyer")}
    for i in range(n_turns):
        if game.done:
            break
        game.apply(GARBAGE if i == garbage_at else agents[game.next_role].respond(game.view()))
    if game.done:
        return
    view = game.view()
    read = read_view(render_messages(view, converge_from_turn=16), sample_seed=99, max_turns=ENV.max_turns)
    assert (read.role, read.domain.name, read.turn, read.sample_seed, read.max_turns) == \
        (view.role, view.domain.name, view.turn, 99, ENV.max_turns)
    assert dict(read.prefs.preferred) == dict(view.prefs.preferred)
    # Weights are shown to three decimals, then renormalised.
    assert list(read.prefs.weights) == list(view.prefs.weights)
    assert all(abs(read.prefs.weights[k] - w) < 0.006 for k, w in view.prefs.weights.items())
    assert abs(sum(read.prefs.weights.values()) - 1.0) < 1e-9
    assert dict(read.ledger) == dict(view.ledger) and list(read.ledger) == list(view.ledger)
    assert [(m.turn, m.role, m.prose, dict(m.ledger_after)) for m in read.history] == \
        [(m.turn, m.role, m.prose, dict(m.ledger_after)) for m in view.history]
    # The prompt shows the party's own parse status only; the counterpart's bit stays unknown.
    assert [m.ok for m in read.history] == [m.ok if m.role == view.role else None for m in view.history]


def test_prompts_that_are_not_the_scaffold_are_refused():
    with pytest.raises(PromptReadError, match="system"):
        read_view([{"role": "user", "content": "hi"}], sample_seed=0, max_turns=24)
    with pytest.raises(PromptReadError, match="no role line"):
        read_view([{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "hi"}],
                  sample_seed=0, max_turns=24)


def test_an_unknown_domain_title_is_refused():
    scenario = make_scenario(load_domains()["used_car"], 3)
    messages = render_messages(Negotiation(scenario, ENV).view(), converge_from_turn=16)
    messages[0]["content"] = messages[0]["content"].replace("(Used car sale)", "(Space station lease)")
    with pytest.raises(PromptReadError, match="Space station lease"):
        read_view(messages, sample_seed=0, max_turns=24)
