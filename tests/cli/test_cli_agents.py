"""``nego agents list-anac``: the ANAC agents by year and name, and which of them run."""

from __future__ import annotations

import pytest

from tests.cli.cli_runner import assert_one_line_error, nego, nego_json

pytest.importorskip("negmas_genius_agents")


def test_the_list_shows_every_agent_by_year_without_playing():
    rows = nego_json("agents", "list-anac", "--no-check")
    by_name = {r["name"]: r for r in rows}
    assert len(rows) >= 140 and by_name["AgentK"]["year"] == 2010 and by_name["HardHeaded"]["year"] == 2011
    assert by_name["TimeDependentAgentBoulware"]["year"] is None  # the package's own baselines
    assert [r["year"] or 0 for r in rows] == sorted(r["year"] or 0 for r in rows)
    assert all(r["runs"] is None and r["spec"] == f"negmas:{r['name']}" for r in rows)


def test_the_check_plays_each_agent_and_says_which_run():
    result = nego("agents", "list-anac", "--agent", "AgentK", "--agent", "HardHeaded", "--rounds", "3")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["2010  AgentK  runs", "2011  HardHeaded  runs", "2 of 2 run"]


def test_a_failing_agent_is_marked_with_its_reason(monkeypatch):
    import negotiation.agents

    monkeypatch.setattr(negotiation.agents, "check_negmas_agent", lambda name, domain, rounds: "RuntimeError: boom")
    rows = nego_json("agents", "list-anac", "--agent", "AgentK")
    assert rows == [{"year": 2010, "name": "AgentK", "spec": "negmas:AgentK", "runs": False,
                     "reason": "RuntimeError: boom"}]


def test_an_unknown_agent_is_one_line():
    assert_one_line_error(nego("agents", "list-anac", "--agent", "AgentZ"), "--agent", "AgentZ")
