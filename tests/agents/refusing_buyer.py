"""A buyer that fails mid-episode, importable by a ``PolicyShards`` helper process by its module
path (a class defined in a test module is not: pytest imports those under another name)."""

from __future__ import annotations

from negotiation.agents import make_agent


class RefusingBuyer:
    """Plays ``scripted:boulware`` until turn 4, then raises."""

    spec = "test:refusing"

    def respond(self, view):
        if view.turn >= 4:
            raise ValueError(f"buyer refused at turn {view.turn}")
        return make_agent("scripted:boulware", "buyer").respond(view)
