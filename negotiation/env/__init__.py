"""The negotiation environment: domains, scenarios, scoring, parser, engine, reward, tables.

Names resolve lazily (on first access, from the module that defines them), so a command
that needs one piece pays only for it: ``nego parse`` imports the parser alone, not numpy
(scenarios), asyncio (the engine) or pydantic (domains, prompts); a stage that never writes
a table (``select@``) never imports pandas (``_tables``).
"""

from __future__ import annotations

from typing import Any

from negotiation._lazy import homes, lazy_attribute

_EXPORTS = {
    "_domain": ("DOMAINS_DIR", "REPO_ROOT", "ROLES", "Domain", "Role", "Term", "default_domains_dir",
                "load_domain", "load_domain_file", "load_domains"),
    "_genius": ("export_genius", "import_genius", "negmas_space", "party_ufun"),
    "_profile": ("Profile",),
    "_engine": ("RECORD_VERSION", "EnvConfig", "Episode", "Negotiation", "TurnRecord", "aplay_turn",
                "arun_episode", "run_episode"),
    "_parse": ("ParsedTurn", "parse_message"),
    "_prompts": ("PROMPT_TEMPLATES", "PromptTemplate", "PromptVariant", "counterpart_of", "prompt_hash", "render_messages",
                 "seller_training_messages"),
    "_reward": ("eq1_reward", "episode_reward", "frontloaded_step_rewards"),
    "_scenario": ("PartyPrefs", "Scenario", "evaluation", "make_scenario", "prefers_high"),
    "_tables": ("KEY", "episode_row", "episodes_to_frames", "error_row", "to_json", "turn_rows", "write_tables"),
    "_utility": ("INVALID", "Score", "canonical_value", "feature", "score_ledger", "score_prefs", "u_tilde"),
    "_view": ("Agent", "Message", "Reply", "View", "arespond", "ledger_changes"),
}
# REPO_ROOT and DOMAINS_DIR follow the working directory (negotiation._root): they are
# resolved on each access (a module ``__getattr__`` in ``_domain``), never cached here.
_PER_ACCESS = frozenset({"REPO_ROOT", "DOMAINS_DIR"})
_HOME = homes(_EXPORTS)
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    value = lazy_attribute(__name__, _HOME, name)
    if name not in _PER_ACCESS:
        globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return __all__
