"""The pilot gate: a short pre-run per (arm, buyer) cell, decided by the protocol's rule.

The pilot plays the protocol's pilot seeds on every domain of the cell (paper: one per domain,
about 54 seller turns) into its own store under ``<out>/pilot`` (resumable like the full run),
counts bad parses over the counted turns, and writes one ``PilotResult`` JSON per cell for the
audit. A cell whose pilot has error rows is ``incomplete`` (rerun with ``--retry-errors``); one
over the limit ``fail``s and is not evaluated, unless a logged deviation is named, which turns
the decision into ``override`` (paper, Appendix K: the 10x LR Sonnet 5 cell was run that way).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict

from negotiation._atomic import write_atomic
from negotiation.agents import redact
from negotiation.env import EnvConfig
from negotiation.evaluation._cell import AgentFactory, AgentPool, CellSpec, run_cell
from negotiation.evaluation._fingerprint import StoreFingerprint, adopt_fingerprint
from negotiation.evaluation._store import ResultsStore, _safe
from negotiation.protocol import PilotGate, Protocol
from negotiation.study import gate_passes

Decision = Literal["pass", "fail", "override", "incomplete"]
RESULT_VERSION = 1


class PilotResult(BaseModel):
    """One cell's pilot outcome, as the audit reads it (``<out>/pilot/gate-<arm>-<buyer>.json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    version: Literal[1] = RESULT_VERSION
    """File format version."""
    study: str
    """Study name."""
    arm: str
    """Arm name."""
    buyer: str
    """Buyer label."""
    seller_spec: str
    """Seller agent spec."""
    buyer_spec: str
    """Buyer agent spec."""
    domains: tuple[str, ...]
    """Domains played."""
    seeds: tuple[int, ...]
    """Pilot seeds played on each domain."""
    episodes: int
    """Pilot episodes stored for the cell."""
    error_rows: int
    """Episodes that ended in an error row (the gate cannot decide on them)."""
    counted_turns: Literal["seller", "all"]
    """Whose turns count."""
    turns_counted: int
    """Turns counted."""
    bad_parses: int
    """Counted turns that failed to parse."""
    max_bad_parses: int
    """The rule's limit."""
    passed: bool
    """Whether the gate holds (``negotiation.study.gate_passes``)."""
    decision: Decision
    """``pass``, ``fail``, ``override`` (failed, covered by ``deviation``) or ``incomplete``."""
    deviation: int | None
    """Id of the logged deviation that covers a failed gate."""
    prompt_hash: str
    """Prompt templates the pilot ran with."""

    @property
    def proceeds(self) -> bool:
        """Whether the full cell may run."""
        return self.decision in ("pass", "override")


def decide(episodes: pd.DataFrame, rule: PilotGate, deviation: int | None) -> dict[str, Any]:
    """Counts and decision for one cell's pilot episodes (all rows of one arm x buyer) under the
    protocol's ``pilot_gate``."""
    ok = episodes[episodes["outcome"] != "error"]
    errors = int((episodes["outcome"] == "error").sum())
    turns_col, bad_col = ("n_seller_turns", "n_bad_seller") if rule.counted_turns == "seller" else ("n_turns", "n_bad_all")
    # A table of error rows only has no count columns at all.
    turns = int(ok[turns_col].sum()) if turns_col in ok else 0
    bad = int(ok[bad_col].sum()) if bad_col in ok else 0
    # A cell run from the CLI may cover fewer domains than the protocol's; the episode count is
    # held to ``episodes_per_cell`` where the full cell is recorded (``pilot_record``).
    passed = gate_passes(episodes=len(ok), bad_parses=bad, error_rows=errors, episodes_per_cell=0,
                         max_bad_parses=rule.max_bad_parses)
    if errors:
        decision: Decision = "incomplete"
    elif passed:
        decision = "pass"
    else:
        decision = "override" if deviation is not None else "fail"
    hashes = sorted({h for h in episodes.get("prompt_hash", pd.Series(dtype=str)).dropna() if h})
    return {"episodes": len(episodes), "error_rows": errors, "turns_counted": turns, "bad_parses": bad,
            "passed": passed, "decision": decision, "prompt_hash": "|".join(hashes)}


def result_path(root: Path, arm: str, buyer: str) -> Path:
    return Path(root) / "pilot" / f"gate-{_safe(arm)}-{_safe(buyer)}.json"


def _write_result(path: Path, result: PilotResult) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, redact(json.dumps(result.model_dump(), indent=2)) + "\n")


async def run_pilot(cell: CellSpec, protocol: Protocol, root: Path, env: EnvConfig, agents: AgentPool | AgentFactory,
                    *, concurrency: int, retry_errors: bool, deviation: int | None = None,
                    fingerprint: StoreFingerprint | None = None,
                    legacy_seller_sha256: str | None = None) -> dict[str, PilotResult]:
    """Run (or resume) every buyer's pilot on the protocol's pilot seeds (``seeds.pilot``, on every
    domain of the cell), decide each by its ``pilot_gate`` and record it; returns them by buyer label.

    With a ``fingerprint``, pilot episodes stored under other inputs are moved aside first.
    """
    rule, seeds = protocol.pilot_gate, tuple(protocol.seeds.pilot.seeds())
    pilot_cell = cell.model_copy(update={"seeds": seeds})
    store = ResultsStore(Path(root) / "pilot")
    if fingerprint is not None:
        adopt_fingerprint(store.root, fingerprint, legacy_seller_sha256=legacy_seller_sha256)
    await run_cell(pilot_cell, store, env, agents, concurrency=concurrency, retry_errors=retry_errors)
    episodes, _ = store.frames()
    results: dict[str, PilotResult] = {}
    for label, spec in sorted(cell.buyers.items()):
        mine = episodes if episodes.empty else episodes[
            (episodes["arm"] == cell.arm) & (episodes["buyer"] == label)
            & episodes["domain"].isin(cell.domains) & episodes["seed"].isin(seeds)]
        counts = decide(mine, rule, deviation) if not mine.empty else \
            {"episodes": 0, "error_rows": 0, "turns_counted": 0, "bad_parses": 0, "passed": False,
             "decision": "incomplete", "prompt_hash": ""}
        result = PilotResult(study=cell.study, arm=cell.arm, buyer=label, seller_spec=cell.seller, buyer_spec=spec,
                             domains=cell.domains, seeds=seeds, counted_turns=rule.counted_turns,
                             max_bad_parses=rule.max_bad_parses,
                             deviation=deviation if counts["decision"] == "override" else None, **counts)
        _write_result(result_path(root, cell.arm, label), result)
        results[label] = result
    return results
