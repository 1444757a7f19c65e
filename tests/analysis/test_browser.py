"""The report and the transcript viewer in headless Chromium (Debian's chromium, driven by playwright)."""

import os
import shutil

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import imread

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if sync_playwright is None or CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install chromium (apt) and playwright (pip) for the browser tests")
        pytest.skip("needs Debian's chromium and the playwright package")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def built(demo_root, demo_results, tmp_path_factory):
    from negotiation.analysis._results import load_context, report_results, viewer_results

    out = tmp_path_factory.mktemp("pages")
    context = load_context("demo", demo_root)
    paths = report_results(context, demo_results, out / "report", seed=0, resamples=2000)
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
    page = browser.new_page()
    page.goto(paths["report.html"].as_uri())
    widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
    assert len(widths) == 4 and min(widths) > 500
    for table in ("table1", "table2", "table3", "table4", "table5", "table6", "table9", "guards", "held_out",
                  "pareto", "deviations", "audit"):
        assert page.locator(f"#{table} caption").count() == 1
    assert page.locator("#table1 tbody tr").count() == 13
    assert page.locator("#guards td.pending").count() == 13  # no sign-offs yet: hand-read guard pending
    page.close()


def test_viewer_filters(browser, built, demo_results):
    _, viewer = built
    episodes = pd.concat([pd.read_parquet(demo_results / "evaluate" / arm / "episodes.parquet")
                          for arm in ("w16_base", "w16_lr3x")])
    turns = pd.concat([pd.read_parquet(demo_results / "evaluate" / arm / "turns.parquet")
                       for arm in ("w16_base", "w16_lr3x")])
    page = browser.new_page()
    page.goto(viewer.as_uri())
    assert page.locator("details.episode").count() == len(episodes) == 288
    page.select_option("#filter-arm", "w16_lr3x")
    assert page.locator("details.episode").count() == 144
    assert page.text_content("#count") == "144 of 288 episodes shown"
    page.select_option("#filter-flag", "json_leak")
    leaking = turns[(turns["arm"] == "w16_lr3x") & turns["flag_json_leak"]].groupby(
        ["domain", "seed", "buyer"]).ngroups
    assert page.locator("details.episode").count() == leaking > 0
    first = page.locator("details.episode").first
    first.locator("summary").click()
    assert first.locator("li.turn").count() > 0
    assert first.locator("li.turn.flagged .flag").first.text_content() == "json leak"
    page.goto(viewer.as_uri() + "?outcome=no_deal&arm=w16_base")
    no_deals = int((~episodes.loc[episodes["arm"] == "w16_base", "deal"]).sum())
    assert page.locator("details.episode").count() == no_deals
    page.close()
