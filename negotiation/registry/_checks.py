"""The audit's checks, in the order the compliance table shows them (and the CLI help lists them)."""

from __future__ import annotations

from negotiation.registry._findings import Check
from negotiation.registry._checks_declared import (
    check_arms,
    check_deviation_arms,
    check_deviation_ids,
    check_hand_read,
    check_lock,
    check_protocol,
    check_registry_files,
    check_panel,
    check_seed_blocks,
    check_supersession,
)
from negotiation.registry._checks_guards import check_guard_thresholds
from negotiation.registry._checks_reads import check_continuations, check_read_steps
from negotiation.registry._checks_episodes import check_contrasts, check_error_rows, check_pairing
from negotiation.registry._checks_results import check_pilot_gate, check_provenance, check_read_points, check_sampling

__all__ = ["CHECKS"]

CHECKS: tuple[Check, ...] = (
    Check("lock", "frozen files (protocol.yaml, arms.yaml, named domains) match protocol/<study>/lock.yaml",
          check_lock, needs_study=False),
    Check("protocol", "protocol.yaml and arms.yaml validate; every named domain file exists", check_protocol,
          needs_study=False),
    Check("registry_files", "every deviation, registry arms.yaml and sign-off file validates against its schema; "
          "no committed sign-off is gone",
          check_registry_files, needs_study=False),
    Check("deviation_ids", "deviation ids are unique, sequential from 1, match NNNN in the file name; dates never "
          "decrease nor pass today; index.yaml keeps every line of its committed versions",
          check_deviation_ids, needs_study=False),
    Check("supersession", "each `supersedes` names an earlier entry, and no entry is superseded twice",
          check_supersession, needs_study=False),
    Check("deviation_arms", "every arm, buyer, domain and protocol key (values) a deviation names exists",
          check_deviation_arms),
    Check("arms", "every planned or evaluated arm is in the frozen matrix, or added with an active arm_added "
                  "deviation that lists it", check_arms),
    Check("read_steps", "each trained arm reads a named read point of the protocol, or its entry's explicit read_step "
                        "gives a read_reason and cites an active read_point / checkpoint_substitution / arm_added "
                        "deviation", check_read_steps),
    Check("continuations", "each continuation branches at the rule's step, or registry continuations.yaml records "
                           "the branch with an active recipe_change / checkpoint_substitution deviation",
          check_continuations),
    Check("panel", "a buyer panel (registry panel.yaml) cites only active analysis_added deviations", check_panel),
    Check("seed_blocks", "training, evaluation, pilot and held-out extension seed blocks are pairwise disjoint",
          check_seed_blocks),
    Check("guard_thresholds", "every guard threshold is frozen in the protocol or given, marked as this project's, "
                              "by registry guards.yaml (never both); post-hoc ones cite an analysis_added deviation",
          check_guard_thresholds),
    Check("hand_read", "trained arms are signed off by a reader (pending until then); failed sign-offs need a "
                       "gate_override deviation", check_hand_read),
    Check("provenance", "every result record carries the locked protocol hash", check_provenance, needs_results=True),
    Check("read_points", "each select/<arm>/selection.json reads its arm's declared step on its run's declared branch; "
                         "a read below it needs a checkpoint_substitution / read_point deviation the entry does not "
                         "cite, a read past it fails", check_read_points, needs_results=True),
    Check("pilot_gate", "each pilot cell (arm x buyer) passed the gate, or a gate_override deviation covers it",
          check_pilot_gate, needs_results=True),
    Check("sampling", "sampling sent to and accepted by seller and buyers equals the protocol's, or a "
                      "sampling_change deviation (a harness_change one only if it names the arm) covers it",
          check_sampling, needs_results=True),
    Check("error_rows", "episode tables hold no more error rows than the protocol allows (zero)", check_error_rows,
          needs_results=True),
    Check("pairing", "every evaluated arm has exactly the protocol's (domain, seed, buyer) keys, once each",
          check_pairing, needs_results=True),
    Check("contrasts", "contrast tables label only the primary family primary (Holm), all other contrasts "
                       "exploratory, and include the whole primary family", check_contrasts, needs_results=True),
)
