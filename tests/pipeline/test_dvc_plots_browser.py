"""`dvc plots show` and `dvc plots diff` on the demo's declarations render with the network off
(issue 31): the page DVC writes from `.dvc/vega/page.html` carries Vega itself, and each training
quantity (reward, KL penalty, entropy) is its own chart with its own y axis. The curves are written
by hand (the real ones take the whole demo); what is under test is the page. The screenshot is kept
as ``test-artifacts/dvc-plots-offline.png``."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from playwright.sync_api import sync_playwright
from tests.pipeline.dvc_checkout import checkout_copy, dvc

from negotiation.pipeline._studyfile import CURVE_QUANTITIES

pytestmark = pytest.mark.browser
PLOTS = [f"curves_{column.split('/')[-1]}" for column in CURVE_QUANTITIES]


def _write_curves(copy) -> list[str]:
    runs = list(yaml.safe_load((copy / "pipelines/plans/demo.yaml").read_text())["plan"]["runs"])
    curves = copy / "outputs/demo/curves"
    curves.mkdir(parents=True, exist_ok=True)
    for i, run in enumerate(runs):
        rows = [f"{s},{0.02 * s + 0.01 * i:.3f},{0.0005 * s / (i + 1):.5f},{3 - 0.03 * s:.3f}" for s in range(1, 17)]
        (curves / f"{run}.csv").write_text("step,train/reward,train/kl_penalty,train/entropy\n" + "\n".join(rows) + "\n")
    return runs


def _render_offline(browser, html, shot=None) -> dict:
    """Open ``html`` with the network off and every non-file request aborted; return, per plot
    div, how many rendered charts and line marks it holds, and the requests that tried to leave."""
    context = browser.new_context(offline=True, viewport={"width": 1400, "height": 900})
    left: list[str] = []
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                  else (left.append(route.request.url), route.abort()))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(html.as_uri())
    page.wait_for_function(f"document.querySelectorAll('div > svg.marks, div > canvas.marks').length >= {len(PLOTS)}",
                           timeout=60_000)
    charts = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('body > div[id]')].map(d => [
        d.id, {charts: d.querySelectorAll('svg.marks, canvas.marks').length,
               lines: d.querySelectorAll('.mark-line path').length,
               y_axis: [...d.querySelectorAll('.role-axis-title text')].map(t => t.textContent)}]))""")
    if shot is not None:
        page.screenshot(path=str(shot), full_page=True)
    context.close()
    return {"charts": charts, "left": left, "errors": errors}


@pytest.fixture(scope="module")
def browser(chromium):
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield launched
        launched.close()


def test_plots_show_and_diff_render_offline_one_axis_per_quantity(browser, tmp_path, artifacts):
    copy = checkout_copy(tmp_path)
    runs = _write_curves(copy)
    shown = dvc(["plots", "show"], copy)
    assert shown.returncode == 0 and "failed to load" not in (shown.stdout + shown.stderr).lower(), shown.stderr[-2000:]
    html = copy / "dvc_plots/index.html"
    assert "cdn.jsdelivr" not in html.read_text()
    page = _render_offline(browser, html, artifacts / "dvc-plots-offline.png")
    assert page["left"] == [] and page["errors"] == []
    assert sorted(page["charts"]) == sorted(PLOTS)
    for (plot, drawn), label in zip(((p, page["charts"][p]) for p in PLOTS), CURVE_QUANTITIES.values()):
        assert drawn["charts"] == 1 and drawn["lines"] >= len(runs), (plot, drawn)
        assert drawn["y_axis"] == ["step", label], (plot, drawn)  # its own y axis, titled by its quantity

    # `dvc plots diff HEAD`: the curves are git-ignored outputs, so HEAD has none; DVC says so (not
    # an error exit) and the page still draws the workspace, offline (docs/pipeline.md).
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], cwd=copy, check=True)
    subprocess.run([*git, "commit", "-qm", "baseline"], cwd=copy, check=True)
    diff = dvc(["plots", "diff", "HEAD", "--json"], copy)
    assert diff.returncode == 0, diff.stderr[-2000:]
    errors = json.loads(diff.stdout[diff.stdout.index("{"):])["errors"]
    assert errors and {e["rev"] for e in errors} == {"HEAD"} and {e["type"] for e in errors} == {"FileNotFoundError"}
    assert dvc(["plots", "diff", "HEAD"], copy).returncode == 0
    page = _render_offline(browser, html)
    assert page["left"] == [] and page["errors"] == [] and sorted(page["charts"]) == sorted(PLOTS)
