"""The records the audit reads (``negotiation.registry`` defines them): pilot gate and sampling.

``pilot/<arm>.json`` (``PilotRecord``): one cell per buyer with episodes, counted turns, bad
parses and ``passed`` by the protocol's rule (limit and ``episodes_per_cell``); a failed cell
that ran anyway must be covered by a ``gate_override`` deviation, which the audit looks up.

``evaluate/<arm>/sampling.json`` (``SamplingRecord``): per agent what the harness sent
(``requested``; ``null`` = not sent) and, once a call succeeded, what the provider accepted
(sent minus what it refused). Agents that send nothing (scripted) record all ``null``; an agent
that samples internally may expose ``sampling_settings`` (a ``SamplingSettings``) to be recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from negotiation._atomic import write_atomic
from negotiation.agents import redact
from negotiation.protocol import SamplingSettings
from negotiation.study import PilotCell, PilotRecord, SamplingRecord, SamplingUse, gate_passes

_FIELDS = tuple(SamplingSettings.model_fields)


def pilot_record(study: str, arm: str, results: dict[str, Any], protocol: Any, protocol_hash: str) -> PilotRecord:
    """The audit's pilot record from this run's per-buyer ``PilotResult``s."""
    gate = protocol.pilot_gate
    cells = []
    for label, result in sorted(results.items()):
        episodes = result.episodes - result.error_rows
        # The record, like the audit that re-derives it, counts completed episodes only.
        passed = gate_passes(episodes=episodes, bad_parses=result.bad_parses, error_rows=0,
                             episodes_per_cell=gate.episodes_per_cell, max_bad_parses=gate.max_bad_parses)
        cells.append(PilotCell(buyer=label, episodes=episodes, turns=result.turns_counted,
                               bad_parses=result.bad_parses, passed=passed))
    return PilotRecord(version=1, study=study, arm=arm, passed=all(c.passed for c in cells), cells=tuple(cells),
                       protocol_hash=protocol_hash)


def _settings(values: dict[str, Any]) -> SamplingSettings:
    return SamplingSettings(**{k: values[k] for k in _FIELDS if values.get(k) is not None})


def sampling_use(agent: Any) -> SamplingUse:
    """What one agent sent and what the provider accepted."""
    record = getattr(agent, "record", None)
    if record is None:
        own = getattr(agent, "sampling_settings", None)
        return SamplingUse(requested=own if isinstance(own, SamplingSettings) else SamplingSettings())
    accepted = _settings(record.accepted) if getattr(agent, "calls_ok", 0) else None
    return SamplingUse(requested=_settings(record.sent), accepted=accepted)


def sampling_record(study: str, arm: str, seller: Any, buyers: dict[str, Any], protocol_hash: str) -> SamplingRecord:
    """The audit's sampling record of one arm (``buyers`` by label)."""
    return SamplingRecord(version=1, study=study, arm=arm, seller=sampling_use(seller),
                          buyers={label: sampling_use(agent) for label, agent in sorted(buyers.items())},
                          protocol_hash=protocol_hash)


def write_redacted(record: Any, path: Path) -> Path:
    """Write a record as indented JSON (credentials redacted), atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, redact(record.model_dump_json(indent=2)) + "\n")
