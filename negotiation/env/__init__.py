"""The negotiation environment: domains, scenarios, scoring, parser, engine, reward, tables.

The table functions (``_tables``) load on first use: they need pandas, which a stage process
that never writes a table (``select@``) should not pay seconds to import.
"""

import importlib
from typing import Any

from negotiation.env._domain import (
    ROLES,
    Domain,
    Role,
    Term,
    default_domains_dir,
    load_domain,
    load_domain_file,
    load_domains,
)
from negotiation.env._engine import (
    RECORD_VERSION,
    EnvConfig,
    Episode,
    Negotiation,
    TurnRecord,
    aplay_turn,
    arun_episode,
    run_episode,
)
from negotiation.env._parse import ParsedTurn, parse_message
from negotiation.env._prompts import (
    PROMPT_TEMPLATES,
    PromptTemplate,
    prompt_hash,
    render_messages,
    seller_training_messages,
)
from negotiation.env._reward import eq1_reward, episode_reward, frontloaded_step_rewards
from negotiation.env._scenario import PartyPrefs, Scenario, make_scenario
from negotiation.env._utility import INVALID, Score, canonical_value, feature, score_ledger, score_prefs, u_tilde
from negotiation.env._view import Agent, Message, Reply, View, arespond

__all__ = [
    "PROMPT_TEMPLATES", "PromptTemplate", "prompt_hash", "render_messages", "seller_training_messages",
    "DOMAINS_DIR", "INVALID", "KEY", "RECORD_VERSION", "REPO_ROOT", "ROLES",
    "Agent", "Domain", "EnvConfig", "Episode", "Message", "Negotiation", "ParsedTurn",
    "PartyPrefs", "Reply", "Role", "Scenario", "Score", "Term", "TurnRecord", "View",
    "aplay_turn", "arespond", "arun_episode", "canonical_value", "default_domains_dir", "episode_reward",
    "episode_row", "error_row",
    "episodes_to_frames", "eq1_reward", "feature", "frontloaded_step_rewards", "load_domain",
    "load_domain_file", "load_domains", "make_scenario", "parse_message", "run_episode",
    "score_ledger", "score_prefs", "to_json", "turn_rows", "u_tilde", "write_tables",
]

_LAZY = {name: "negotiation.env._tables" for name in
         ("KEY", "episode_row", "episodes_to_frames", "error_row", "to_json", "turn_rows", "write_tables")}
# REPO_ROOT and DOMAINS_DIR follow the working directory (negotiation._root), so they are
# resolved on each access rather than fixed at import.
_LAZY.update({"REPO_ROOT": "negotiation.env._domain", "DOMAINS_DIR": "negotiation.env._domain"})


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'negotiation.env' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
