"""Agents: one interface for every seller and buyer, named by spec strings."""

from negotiation.agents._llm_ratelimit import (RateLimit, RateLimiter, configure_rate_limits, provider_limiter,
                                               rate_limits_from_params)
from negotiation.agents._offers import offer_at_target
from negotiation.agents._prose import action_json, render_accept, render_counter, term_phrase
from negotiation.agents._scripted import ScriptedAgent, make_scripted
from negotiation.agents._spec import AgentSpec, make_agent, parse_spec, register_kind
from negotiation.env import Agent, Reply, View

__all__ = [
    "Agent", "AgentSpec", "RateLimit", "RateLimiter", "Reply", "ScriptedAgent", "View", "action_json",
    "configure_rate_limits", "make_agent", "provider_limiter", "rate_limits_from_params",
    "make_scripted", "offer_at_target", "parse_spec", "register_kind", "render_accept",
    "render_counter", "term_phrase", "Policy", "PolicyAgent", "PolicyArch",
]


def __getattr__(name: str):  # the demo policy seller needs torch: import it only when asked for
    if name in ("Policy", "PolicyAgent", "PolicyArch"):
        from negotiation.agents import _policy, _policy_net

        return getattr(_policy, name, None) or getattr(_policy_net, name)
    raise AttributeError(f"module 'negotiation.agents' has no attribute {name!r}")
