"""Agents: one interface for every seller and buyer, named by spec strings."""

from typing import Any

from negotiation._lazy import lazy_attribute
from negotiation.agents._llm_secrets import redact, redact_obj, redact_obj_with, redactor
from negotiation.agents._llm_ratelimit import (RateLimit, RateLimiter, configure_rate_limits, configured_rate_limits,
                                               install_limiters, provider_limiter,
                                               rate_limits_from_params)
from negotiation.agents._offers import offer_at_target
from negotiation.agents._prose import action_json, render_accept, render_counter, term_phrase
from negotiation.agents._scripted import ScriptedAgent, make_scripted
from negotiation.agents._kinds import AgentKind, agent_kind, kind_names, register_kind
from negotiation.agents._spec import AgentSpec, kind_factory, make_agent, parse_spec
from negotiation.env import Agent, Reply, View
# ANAC agents as parties: the module registers the ``negmas`` kind (NegMAS loads on first use)
from negotiation.agents._negmas import NegmasAgent, anac_classes, check_negmas_agent, make_negmas
from negotiation.agents._negmas_peer import TIMED_OUT_OFFER, PeerCheck, PeerOutcome, peer_check

__all__ = [
    "Agent", "AgentCallError", "AgentKind", "AgentSpec", "RateLimit", "RateLimiter", "Reply", "RetryPolicy", "ScriptedAgent", "View", "action_json", "agent_kind",
    "configure_rate_limits", "configured_rate_limits", "install_limiters", "kind_factory", "kind_names", "make_agent", "provider_limiter",
    "rate_limits_from_params",
    "make_scripted", "offer_at_target",
    # ANAC agents through NegMAS (``negmas:<Name>``; the ``anac`` extra loads on first use)
    "NegmasAgent", "anac_classes", "check_negmas_agent", "make_negmas", "parse_spec",
    # a peer's check: an ANAC pairing in our protocol beside NegMAS's own SAOMechanism
    "PeerCheck", "PeerOutcome", "TIMED_OUT_OFFER", "peer_check", "register_kind", "render_accept",
    "render_counter", "term_phrase", "Policy", "PolicyAgent", "PolicyArch",
    # secrets: every key a provider call reads is redacted from what the harness writes
    "redact", "redact_obj", "redact_obj_with", "redactor",
    # language-model sellers and their settings (lazy: litellm, torch, vLLM)
    "Decoding", "SamplingRole", "ServeSettings", "default_sampling_role", "llm_settings", "make_hf_agent",
    "make_litellm_agent", "make_vllm_agent", "turn_seed",
    # the demo policy's tensors, which training optimises (lazy: torch)
    "FeatureBatch", "concat_features", "feature_tensors", "token_logprobs_entropy", "token_mask", "view_features",
    # the warm starts' scripted corpus, and a scripted turn as the policy's action (its imitation target)
    "imitation_action", "scripted_seller_turns", "training_buyer",
    # lockstep rollouts of the demo policy over this process and torch-free helper processes
    "EpisodeOutcome", "PolicyShards", "SellerBatch", "outcome_of",
]


# The demo policy seller needs torch, the retry policy numpy and the transport: these names load
# on first use, so importing the package (every command that names an agent) stays light.
_LAZY = {"Policy": "_policy", "PolicyAgent": "_policy", "PolicyArch": "_policy_net",
         "AgentCallError": "_llm_retry", "RetryPolicy": "_llm_retry",
         "Decoding": "_llm_sampling", "SamplingRole": "_llm_sampling", "ServeSettings": "_llm_vllm",
         "default_sampling_role": "_llm_settings", "llm_settings": "_llm_settings", "turn_seed": "_llm_settings",
         "make_hf_agent": "_llm_hf", "make_litellm_agent": "_llm", "make_vllm_agent": "_llm_vllm",
         "FeatureBatch": "_policy_features", "concat_features": "_policy_features", "view_features": "_policy_features",
         "feature_tensors": "_policy_net", "token_logprobs_entropy": "_policy_net", "token_mask": "_policy_net",
         "EpisodeOutcome": "_policy_shards", "PolicyShards": "_policy_shards", "SellerBatch": "_policy_shards",
         "outcome_of": "_policy_shards", "scripted_seller_turns": "_corpus", "training_buyer": "_corpus",
         "imitation_action": "_policy_encode"}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, name)
