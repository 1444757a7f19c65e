"""``registry/<study>/panel.yaml``: the demo's panel loads; a panel that does not fit the protocol
stops ``load_study`` with ``file:key: reason``."""

from __future__ import annotations

import re

import pytest

from negotiation.errors import ConfigError
from negotiation.study import load_study

PANEL = "registry/demo/panel.yaml"


def test_the_demo_declares_a_panel_of_anac_agents():
    panel = load_study("demo").panel
    assert panel is not None and panel.deviations == (1,)
    assert all(spec.startswith("negmas:") for spec in panel.buyers.values())
    assert tuple(panel.seeds.seeds()) == tuple(range(5000000, 5000008))
    assert load_study("lm").panel is None


@pytest.mark.parametrize("old, new, message", [
    ("domains: [job_offer]", "domains: [no_such]", "registry/demo/panel.yaml:domains.0: 'no_such' is not an evaluated domain"),
    ("  agentk: negmas:AgentK?levels=3", "  titfortat: negmas:AgentK?levels=3",
     "registry/demo/panel.yaml:buyers.titfortat: label 'titfortat' is an evaluation buyer"),
    ("seeds: {start: 5000000, stop: 5000008}", "seeds: {start: 5000000, stop: 5000000}",
     "registry/demo/panel.yaml:seeds: Value error, stop (5000000) must exceed start (5000000)"),
    ("deviations: [1]", "deviations: []", "registry/demo/panel.yaml:deviations"),
    ("study: demo", "study: lm", "registry/demo/panel.yaml:study: 'lm' differs from 'demo'"),
])
def test_a_panel_that_does_not_fit_names_file_and_key(committed_root, edit, old, new, message):
    edit(committed_root / PANEL, old, new)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_study("demo", committed_root)
