"""Recording a reader's hand-read sign-off: ``registry/<study>/signoffs/<arm>.yaml``.

The analysis reads sign-offs (the hand-read guard) as typed arguments; writing them is the
registry's, beside the loader (``Study.signoffs``).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import yaml
from pydantic import ValidationError

from negotiation.errors import ConfigError
from negotiation.study import SignOff, Study

__all__ = ["SignoffError", "record_signoff"]


class SignoffError(ConfigError):
    """A hand-read sign-off record is malformed or names an unknown arm (``where:key: reason``)."""

    def __init__(self, where: str, key: str, reason: str) -> None:
        self.where, self.key, self.reason = where, key, reason
        super().__init__(f"{where}:{key}: {reason}")


def record_signoff(study: Study, arm: str, *, reader: str, verdict: str, transcripts: int,
                   families: tuple[str, ...], notes: str, date: dt.date) -> Path:
    """Write ``registry/<study>/signoffs/<arm>.yaml`` (replacing an earlier sign-off of the arm)."""
    if arm not in study.arms:
        raise SignoffError("signoff", "arm", f"{arm!r} is not an arm of study {study.name!r}")
    path = study.registry.dir / "signoffs" / f"{arm}.yaml"
    try:
        record = SignOff(version=1, arm=arm, reader=reader, date=date, transcripts_read=transcripts,
                         domain_families=families, verdict=verdict, notes=notes)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        raise SignoffError(str(path), key, f"{first['msg']} (got {first.get('input')!r})") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(record.model_dump(mode="json"), sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path
