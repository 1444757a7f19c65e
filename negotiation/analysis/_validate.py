"""Validation of the episode tables with great-expectations 1.x, before any report.

One ephemeral context, one suite over all arms' episodes stacked, with derived columns
for the checks that span rows (pairing, per-arm counts, outcome consistency). Failing
rows are named by ``arm, domain, seed, buyer``. Data Docs HTML is written when a folder
is given, under a fixed run name so paths do not carry the time.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Literal, Mapping

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from negotiation.analysis._errors import ValidationFailed
from negotiation.analysis._metrics import require_columns
from negotiation.protocol import NoDealPenalty  # the protocol's rule for λ, not a second one

ROW_KEY = ["arm", "domain", "seed", "buyer"]
"""Columns that name a failing row."""
ROWS_SHOWN = 20
"""Failing rows kept per expectation in the report."""
TOLERANCE = 1e-9
"""Slack for float equalities in the consistency check."""
DOCS_RUN_TIME = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)
"""Fixed run time for Data Docs paths (great-expectations puts it in the folder name)."""


class ValidationSettings(BaseModel):
    """What the tables must satisfy; built from the protocol by ``validation_settings``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = 1
    """Schema version of this record."""
    arms: tuple[str, ...] = Field(min_length=1)
    """Arms whose tables must all be present (and no others)."""
    episodes_per_arm: int = Field(gt=0)
    """Episodes each arm must have."""
    max_error_rows: int = Field(ge=0)
    """Error rows allowed over all arms."""
    no_deal_penalty: NoDealPenalty
    """λ: S of a no-deal is −λ, so S ∈ [−λ, 1]."""
    turn_cap: int = Field(gt=0)
    """Most turns an episode may have."""
    pairing_key: tuple[str, ...]
    """Columns that pair episodes across arms."""


def validation_settings(protocol, arms) -> ValidationSettings:
    """Settings from a ``negotiation.protocol.Protocol`` for the given arm names."""
    return ValidationSettings(
        arms=tuple(arms), episodes_per_arm=protocol.evaluation.episodes_per_arm,
        max_error_rows=protocol.evaluation.max_error_rows, no_deal_penalty=protocol.environment.no_deal_penalty,
        turn_cap=protocol.environment.turn_cap, pairing_key=tuple(protocol.evaluation.pairing_key),
    )


class CheckResult(BaseModel):
    """One expectation's outcome."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = 1
    """Schema version of this record."""
    expectation: str
    """great-expectations expectation type."""
    column: str
    """Column (or columns) checked."""
    success: bool
    """Whether the expectation held."""
    unexpected_count: int
    """Rows (or values) that broke it."""
    rows: list[dict[str, Any]]
    """Up to ROWS_SHOWN failing rows, by key and the bad value."""


class ValidationReport(BaseModel):
    """Every check of one validation run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = 1
    """Schema version of this record."""
    success: bool
    """True when every expectation held."""
    checks: list[CheckResult]
    """One entry per expectation, in suite order."""
    data_docs: str | None = None
    """Index page of the Data Docs site, when written."""
    tables: dict[str, str] = {}
    """Arm -> SHA-256 of the episode table validated (a later stage re-validates on change)."""


def _consistent(frame: pd.DataFrame, penalty: float) -> pd.Series:
    """Per row: the outcome, the deal flag, S, the utilities and the counters agree."""
    outcome, deal = frame["outcome"], frame["deal"].astype(bool)
    s, seller = frame["S"].astype(float), frame["seller_u"].astype(float)
    parts = frame["seller_u_dist"].astype(float) + frame["seller_u_integ"].astype(float)
    closing = pd.to_numeric(frame["closing_turn"], errors="coerce")
    is_deal = (outcome == "deal") & deal & ((s - seller).abs() <= TOLERANCE) & np.isfinite(frame["buyer_u"]) \
        & ((seller - parts).abs() <= TOLERANCE) & closing.notna()
    is_no_deal = (outcome == "no_deal") & ~deal & ((s + penalty).abs() <= TOLERANCE) & seller.isna()
    counters = (frame["n_bad_seller"] <= frame["n_seller_turns"]) & (frame["n_seller_turns"] <= frame["n_turns"]) \
        & (frame["n_bad_all"] <= frame["n_turns"])
    return ((outcome == "error") | is_deal | is_no_deal) & counters


def validation_frame(frames: Mapping[str, pd.DataFrame], settings: ValidationSettings) -> pd.DataFrame:
    """All arms stacked, with the derived columns the suite checks."""
    for arm, frame in frames.items():
        require_columns(frame, ["arm", *settings.pairing_key, "outcome", "deal", "S", "seller_u", "buyer_u",
                                "seller_u_dist", "seller_u_integ", "n_turns", "n_seller_turns", "n_bad_seller",
                                "n_bad_all", "closing_turn"], arm)
    stacked = pd.concat(list(frames.values()), ignore_index=True)
    key = list(settings.pairing_key)
    stacked["arms_with_key"] = stacked.groupby(key)["arm"].transform("nunique")
    stacked["episodes_in_arm"] = stacked.groupby("arm")["arm"].transform("size")
    stacked["outcome_consistent"] = _consistent(stacked, settings.no_deal_penalty)
    return stacked


def _suite(settings: ValidationSettings, num_rows: int):
    import great_expectations as gx

    x = gx.expectations
    arms = len(settings.arms)
    error_share = 1.0 - settings.max_error_rows / max(num_rows, 1)
    return [
        x.ExpectColumnDistinctValuesToEqualSet(column="arm", value_set=list(settings.arms)),
        x.ExpectColumnValuesToBeInSet(column="outcome", value_set=["deal", "no_deal"], mostly=min(1.0, error_share)),
        x.ExpectCompoundColumnsToBeUnique(column_list=["arm", *settings.pairing_key]),
        x.ExpectColumnValuesToBeBetween(column="arms_with_key", min_value=arms, max_value=arms),
        x.ExpectColumnValuesToBeBetween(column="episodes_in_arm", min_value=settings.episodes_per_arm,
                                        max_value=settings.episodes_per_arm),
        x.ExpectColumnValuesToBeBetween(column="S", min_value=-settings.no_deal_penalty, max_value=1.0),
        x.ExpectColumnValuesToBeBetween(column="seller_u", min_value=0.0, max_value=1.0),
        x.ExpectColumnValuesToBeBetween(column="buyer_u", min_value=0.0, max_value=1.0),
        x.ExpectColumnValuesToBeBetween(column="n_turns", min_value=1, max_value=settings.turn_cap),
        x.ExpectColumnValuesToBeInSet(column="outcome_consistent", value_set=[True]),
    ]


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _check(result) -> CheckResult:
    config = result.expectation_config
    kwargs = config.kwargs
    column = kwargs.get("column") or ",".join(kwargs.get("column_list", []))
    details = result.result or {}
    rows = [{k: _plain(v) for k, v in row.items()} for row in (details.get("unexpected_index_list") or [])]
    if not rows and not result.success and details.get("details"):
        rows = [{"mismatched": str(details["details"].get("mismatched") or details["details"])}]
    count = details.get("unexpected_count")
    return CheckResult(expectation=config.type, column=column, success=bool(result.success),
                       unexpected_count=int(count if count is not None else (0 if result.success else 1)),
                       rows=rows[:ROWS_SHOWN])


def validate_episodes(
    frames: Mapping[str, pd.DataFrame], settings: ValidationSettings, *, docs_dir: Path | None = None,
    study: str = "study",
) -> ValidationReport:
    """Run the suite over every arm's episode table; write Data Docs under ``docs_dir``."""
    import great_expectations as gx
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.base import ProgressBarsConfig

    stacked = validation_frame(frames, settings)
    context = gx.get_context(mode="ephemeral")
    # The progress bars would clutter every pipeline log; results are reported below.
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch = context.data_sources.add_pandas("episodes").add_dataframe_asset("table").add_batch_definition_whole_dataframe("all")
    suite = context.suites.add(gx.ExpectationSuite(name="episodes"))
    for expectation in _suite(settings, len(stacked)):
        suite.add_expectation(expectation)
    definition = context.validation_definitions.add(gx.ValidationDefinition(name="episodes", data=batch, suite=suite))
    actions = []
    if docs_dir is not None:
        context.add_data_docs_site(site_name="analysis", site_config={
            "class_name": "SiteBuilder", "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            # great-expectations refuses a relative base_directory (a relative --results did)
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(Path(docs_dir).resolve())}})
        actions.append(gx.checkpoint.UpdateDataDocsAction(name="docs", site_names=["analysis"]))
    checkpoint = context.checkpoints.add(gx.Checkpoint(
        name="validate", validation_definitions=[definition], actions=actions,
        result_format={"result_format": "COMPLETE", "unexpected_index_column_names": ROW_KEY}))
    run = checkpoint.run(batch_parameters={"dataframe": stacked},
                         run_id=RunIdentifier(run_name=study, run_time=DOCS_RUN_TIME))
    checks = [_check(result) for outcome in run.run_results.values() for result in outcome.results]
    index = str(Path(docs_dir) / "index.html") if docs_dir is not None else None
    return ValidationReport(success=all(c.success for c in checks), checks=checks, data_docs=index)


def require_valid(report: ValidationReport) -> None:
    """Raise ValidationFailed naming the first failing expectation and its rows."""
    failing = [check for check in report.checks if not check.success]
    if not failing:
        return
    first = failing[0]
    rows = "; ".join(", ".join(f"{k}={v!r}" for k, v in row.items()) for row in first.rows[:5]) or "table-level"
    others = f" (and {len(failing) - 1} more failing expectations)" if len(failing) > 1 else ""
    raise ValidationFailed(
        "validation", f"{first.expectation}({first.column})",
        f"{first.unexpected_count} unexpected rows, e.g. {rows}{others}",
    )
