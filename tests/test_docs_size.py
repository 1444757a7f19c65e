"""docs/*.md stay how-tos and reference (issue 29 point 4, issue 31): at most 12,000 words together,
no dated measurement logs (those live in docs/results/<topic>-history/), and every relative link of
docs/*.md and README.md resolves to a file and, where it names one, a heading."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = sorted((REPO / "docs").glob("*.md"))
MAX_WORDS = 12_000
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
DATE = re.compile(r"(?<![\w/-])20\d\d-\d\d-\d\d(?![\w/-])")  # a date, not part of a results folder's name


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} +(.+?) *#*$", text, flags=re.M)}


def test_the_docs_stay_within_their_word_budget():
    words = {p.name: len(p.read_text(encoding="utf-8").split()) for p in DOCS}
    assert sum(words.values()) <= MAX_WORDS, (sum(words.values()), sorted(words.items(), key=lambda kv: -kv[1]))


def test_no_dated_measurement_log_in_the_docs():
    dated = [f"{p.name}: {m.group(0)}" for p in DOCS for m in DATE.finditer(p.read_text(encoding="utf-8"))]
    assert not dated, f"move dated figures to docs/results/<topic>-history/README.md: {dated}"


def test_every_relative_link_resolves():
    broken = []
    for page in [REPO / "README.md", *DOCS]:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, broken


def test_the_slug_is_githubs():
    assert _slug("The rollout engine (`SlotRollout`)") == "the-rollout-engine-slotrollout"
    assert _slug("Episode table (one row per episode; Parquet)") == "episode-table-one-row-per-episode-parquet"
