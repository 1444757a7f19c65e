"""The viewer's data and page without a browser: escaping, compact turns, scenario pairing."""

import json
import re

import pandas as pd

from negotiation.analysis._viewer import FLAGS, viewer_data, viewer_html


def _tables(demo_results, arm="w16_base", n=3):
    episodes = pd.read_parquet(demo_results / "evaluate" / arm / "episodes.parquet").head(n)
    turns = pd.read_parquet(demo_results / "evaluate" / arm / "turns.parquet")
    return episodes, turns.merge(episodes[["arm", "domain", "seed", "buyer"]], on=["arm", "domain", "seed", "buyer"])


def test_transcript_text_cannot_close_or_comment_out_the_data_script(demo_results):
    episodes, turns = _tables(demo_results)
    turns = turns.copy()
    turns.loc[turns.index[0], "prose"] = "</script><!--<script>alert(1)</script>&'\""
    page = viewer_html(episodes, turns, title="<b>t</b>", note="<i>n</i>")
    assert page.count("</script>") == 2 and "<!--" not in page  # the two real closing tags only
    assert "<b>t</b>" not in page and "&lt;b&gt;t&lt;/b&gt;" in page and "&lt;i&gt;n&lt;/i&gt;" in page
    blob = re.search(r'<script id="viewer-data" type="application/json">(.*?)</script>', page, re.S).group(1)
    assert json.loads(blob)["episodes"][0][7][0][1] == "</script><!--<script>alert(1)</script>&'\""


def test_turns_carry_the_ledger_entries_they_changed_and_their_flags(demo_results):
    episodes, turns = _tables(demo_results, n=1)
    data = viewer_data(episodes, turns)
    (episode,) = data["episodes"]
    ledger = {}
    for row, turn in zip(episode[7], turns.sort_values("turn").itertuples()):
        ledger.update(row[6])
        assert ledger == json.loads(turn.ledger_after)
        assert bool(row[7] & (1 << FLAGS.index("bad_parse"))) == (not turn.ok)
        assert bool(row[7] & (1 << FLAGS.index("json_leak"))) == bool(turn.flag_json_leak)
    assert episode[6] == _or(r[7] for r in episode[7])


def _or(masks):
    total = 0
    for m in masks:
        total |= m
    return total
