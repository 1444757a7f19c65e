"""``panel``: every planned seller arm against the study's exploratory buyer panel.

The panel (``registry/<study>/panel.yaml``, ``Study.panel``) names buyers from outside the study,
e.g. ANAC agents, a few domains and a seed block. Each arm's seller (``select/<arm>/seller.json``,
as ``evaluate@`` plays it) meets every panel buyer on every (domain, seed) through the same cell
runner as the evaluation: resumable stores, error rows for an agent that raises or stalls, never a
failed run. The tables go to ``panel/<arm>/``; the report's panel section reads them
(``panel_tables``). The frozen evaluation and its analysis never read them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from negotiation.errors import ConfigError
from negotiation.evaluation import RunOptions, arm_settings, build_cell, evaluate_cell
from negotiation.pipeline._evaluate import _concurrency, _seller, _seller_sha256, _seller_weights, _torch_single_thread
from negotiation.pipeline._plan import planned_arms
from negotiation.pipeline._progress import StageProgress
from negotiation.study import ResultsLayout, Study, as_study, panel_path


def run_panel_stage(study: Study | str, results_dir: Path, *, arms: list[str] | None = None,
                    concurrency: int | None = None) -> dict[str, Any]:
    """Play each arm against the panel into ``panel/<arm>/``; return episodes and error rows per arm.

    Raises:
        ConfigError: the study has no panel, or an arm has no ``select/<arm>/seller.json``.
    """
    study = as_study(study)
    panel = study.panel
    if panel is None:
        raise ConfigError(f"{study.show(panel_path(study.name, study.root))}:<file>: study {study.name!r} "
                          "has no buyer panel")
    layout = ResultsLayout(Path(results_dir))
    names = arms if arms is not None else planned_arms(study, layout.dir)
    missing = [arm for arm in names if not layout.seller(arm).is_file()]
    if missing:
        raise ConfigError(f"{layout.seller(missing[0])}:seller: no selected seller for arm {missing[0]!r} "
                          "(run its select stage first)")
    options = RunOptions(concurrency=_concurrency(concurrency), retry_errors=True, pilot=False)
    counts: dict[str, Any] = {}
    with StageProgress("panel", unit="arms") as progress:
        for done, arm in enumerate(names):
            counts[arm] = _play_arm(study, layout, arm, options)
            progress.update(done + 1, len(names), arm)
    return counts


def _play_arm(study: Study, layout: ResultsLayout, arm: str, options: RunOptions) -> dict[str, int]:
    """One arm's cell against the panel: its seller, the panel's buyers, domains and seeds."""
    panel = study.panel
    seller = _seller(layout, arm)
    _torch_single_thread(seller)
    cell = build_cell(study.protocol, arm=arm, seller=seller, buyers=dict(panel.buyers),
                      domains=tuple(panel.domains), seeds=tuple(panel.seeds.seeds()))
    result = asyncio.run(evaluate_cell(cell, layout.panel(arm), study.protocol, protocol_hash=study.lock_hash,
                                       options=options, seller_weights=_seller_weights(layout, arm),
                                       seller_sha256=_seller_sha256(layout, arm),
                                       **arm_settings(study, arm, seller)))
    return {"episodes": len(result.episodes), "errors": result.error_rows}
