"""The report and the transcript viewer in headless Chromium (Debian's chromium, driven by playwright)."""

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import imread
from playwright.sync_api import sync_playwright

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser(chromium):
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def built(demo_root, demo_results, tmp_path_factory):
    from negotiation.analysis import report_results, viewer_results
    from negotiation.pipeline import registry_inputs
    from negotiation.study import load_study

    out = tmp_path_factory.mktemp("pages")
    context = load_study("demo", demo_root)
    paths = report_results(context, demo_results, out / "report", registry_inputs(context, demo_results), seed=0,
                           resamples=2000)
    viewer = viewer_results(context, demo_results, out / "viewer.html", arms=["w16_base", "w16_lr3x"],
                            max_episodes=10_000, seed=0)
    return paths, viewer


def test_figures_are_non_empty_images(built):
    paths, _ = built
    for name in ("figure2a", "figure2b", "figure3a", "figure3b"):
        pixels = imread(paths[f"figures/{name}.png"])
        assert pixels.shape[0] > 300 and pixels.shape[1] > 500
        assert pixels[..., :3].std() > 0.05  # drawn content, not a blank canvas


def test_report_renders_with_tables_and_images(browser, built):
    paths, _ = built
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(paths["report.html"].as_uri())
    # wide tables scroll in their own box: the page is no wider than the window
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400
    widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
    assert len(widths) == 4 and min(widths) > 500
    for table in ("table1", "table1_arms", "table2", "utility_parts", "table3", "table4", "table5", "buyers",
                  "table6", "table9", "text_contrasts", "guards", "held_out", "pareto", "deviations", "audit"):
        assert page.locator(f"#{table} caption").count() == 1
    assert page.locator("#table1 tbody tr").count() == 4  # the paper's layout: one row per size
    assert page.locator("#table1_arms tbody tr").count() == 13
    assert page.locator("#guards td.pending").count() == 13  # no sign-offs yet: hand-read guard pending
    page.close()


def _open(browser, url):
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']", timeout=120_000)
    return page, errors


def test_viewer_filters_and_pairs_arms(browser, built, demo_results):
    _, viewer = built
    episodes = pd.concat([pd.read_parquet(demo_results / "evaluate" / arm / "episodes.parquet")
                          for arm in ("w16_base", "w16_lr3x")])
    turns = pd.concat([pd.read_parquet(demo_results / "evaluate" / arm / "turns.parquet")
                       for arm in ("w16_base", "w16_lr3x")])
    page, errors = _open(browser, viewer.as_uri())
    assert page.locator("details.episode").count() == len(episodes) == 288
    page.select_option("#f-a", label="w16_lr3x")
    assert page.locator("details.episode").count() == 144
    assert page.text_content("#count") == "144 of 288 episodes shown"
    page.select_option("#f-flag", label="json_leak")
    leaking = turns[(turns["arm"] == "w16_lr3x") & turns["flag_json_leak"]].groupby(
        ["domain", "seed", "buyer"]).ngroups
    assert page.locator("details.episode").count() == leaking > 0
    first = page.locator("details.episode").first
    first.locator("summary").click()
    first.locator(".sides").wait_for()  # turns are drawn on the toggle event
    assert first.locator("li.turn").count() > 0
    assert first.locator("li.turn.flagged .flag").first.text_content() == "json leak"
    page.goto(viewer.as_uri() + "?outcome=no_deal&arm=w16_base")
    page.wait_for_selector("body[data-ready='1']")
    no_deals = int((~episodes.loc[episodes["arm"] == "w16_base", "deal"]).sum())
    assert page.locator("details.episode").count() == no_deals
    # Two arms side by side on the same scenarios, sorted by the paired difference in S.
    page.goto(viewer.as_uri() + "?a=w16_lr3x&b=w16_base&sort=dS_asc")
    page.wait_for_selector("body[data-ready='1']")
    assert page.locator("details.episode").count() == 144
    key = ["domain", "seed", "buyer"]
    paired = episodes[episodes["arm"] == "w16_lr3x"].merge(episodes[episodes["arm"] == "w16_base"], on=key)
    worst = paired.assign(dS=paired["S_x"].round(4) - paired["S_y"].round(4)).sort_values("dS").iloc[0]
    first = page.locator("details.episode").first
    assert f"{worst['domain']} · seed {worst['seed']} · {worst['buyer']}" in first.locator("summary").text_content()
    first.locator("summary").click()
    first.locator(".sides").wait_for()  # turns are drawn on the toggle event
    sides = first.locator(".side")
    assert sides.count() == 2
    assert sides.nth(0).locator("h3").text_content().startswith("w16_lr3x")
    assert sides.nth(1).locator("h3").text_content().startswith("w16_base")
    # Text search over the prose of either arm's episode.
    word = str(turns.loc[turns["arm"] == "w16_base", "prose"].iloc[0]).split()[0]
    page.fill("#f-q", word)
    page.wait_for_timeout(400)
    assert 0 < page.locator("details.episode").count() <= 144
    assert errors == []
    page.close()


def test_report_links_lead_to_the_transcripts_behind_a_row(browser, built):
    paths, _ = built
    page, _ = browser.new_page(), None
    page.goto(paths["report.html"].as_uri())
    link = page.locator("#table1_arms tbody tr").first.locator("a").first
    href = link.get_attribute("href")
    assert href.startswith("transcripts.html?a=") and "&b=" in href and "sort=dS_asc" in href
    # nego report writes the viewer its links name (it used to be written by the DVC stage only)
    assert paths["transcripts.html"] == paths["report.html"].parent / href.split("?")[0]
    link.click()
    page.wait_for_selector("details.episode")
    assert page.locator("details.episode").count() > 0
    page.close()


def test_adversarial_transcript_renders_as_text(browser, tmp_path, demo_results):
    from negotiation.analysis._viewer import write_viewer

    episodes = pd.read_parquet(demo_results / "evaluate" / "w16_base" / "episodes.parquet").head(2)
    turns = pd.read_parquet(demo_results / "evaluate" / "w16_base" / "turns.parquet")
    key = ["arm", "domain", "seed", "buyer"]
    turns = turns.merge(episodes[key], on=key)
    hostile = ["</script><script>window.pwned=1</script>", "<!--<script>window.pwned=2</script>",
               "<img src=x onerror=\"window.pwned=3\"> <b>bold</b> &amp; ]]>",
               '{"action": "COUNTER", "terms": [' + ",".join(['{"name": "x", "value": "' + "y" * 50 + '"}'] * 20000)
               + "]}"]
    turns = turns.copy()
    for i, text in enumerate(hostile):
        turns.loc[turns.index[i], "prose"] = text
    turns.loc[turns.index[0], "terms"] = '[["</script>", "<!--"]]'
    turns.loc[turns.index[0], "ledger_after"] = '{"</script><script>window.pwned=4</script>": 1}'
    path = write_viewer(tmp_path / "v.html", episodes, turns, title="</title><script>window.pwned=5</script>",
                        note="<!-- <script>window.pwned=6</script>")
    page, errors = _open(browser, path.as_uri())
    assert page.evaluate("window.pwned") is None
    assert page.locator("details.episode").count() == 2
    page.locator("details.episode").first.locator("summary").click()
    page.locator("details.episode .sides").first.wait_for()
    prose = page.locator("details.episode").first.locator(".prose").all_text_contents()
    assert prose[:3] == hostile[:3] and len(prose[3]) == len(hostile[3])
    assert page.evaluate("window.pwned") is None and errors == []
    assert page.title() == "</title><script>window.pwned=5</script>"
    page.close()


@pytest.mark.slow
def test_viewer_load_time_at_24k_episodes(browser, tmp_path_factory):
    """Paper scale: 24,000 episodes load and draw their first page; the load time is printed."""
    from negotiation.analysis._viewer import write_viewer
    from tests.analysis.viewer_scale import scaled_tables

    episodes, turns = scaled_tables(24_000)
    path = write_viewer(tmp_path_factory.mktemp("scale") / "v.html", episodes, turns, title="24k")
    page, errors = _open(browser, path.as_uri())
    load_ms = page.evaluate("window.viewerLoadMs")
    print(f"viewer at {len(episodes)} episodes ({path.stat().st_size / 1e6:.0f} MB): loaded and drawn in {load_ms:.0f} ms")
    assert page.text_content("#count").endswith(f"of {len(episodes)} episodes shown")
    arms = sorted(episodes["arm"].unique())
    page.select_option("#f-a", label=arms[1])
    page.select_option("#f-b", label=arms[0])
    page.select_option("#f-sort", "dS_desc")
    assert page.locator("details.episode").count() == 500  # one page drawn; the rest on demand
    assert errors == []
    page.close()
