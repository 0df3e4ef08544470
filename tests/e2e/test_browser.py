"""The real report and run index in headless Chromium (Debian's ``chromium``), from
disk, offline: no console errors, no network requests, the numbers on the page equal
``metrics.json``, the script works under the page's CSP, and the page is complete
without JavaScript. Screenshots are kept beside the report."""

import json
import os
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Flags that keep Chromium from phoning home on a closed network.
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail(
                "chromium is not installed (make test installs Debian's package)"
            )
        pytest.skip("chromium is not installed (make test installs Debian's package)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


def _open(browser, path, *, javascript=True):
    """Load ``path`` from disk; return the page and every problem seen."""
    context = browser.new_context(java_script_enabled=javascript)
    page = context.new_page()
    problems = []
    url = path.resolve().as_uri()
    home = path.resolve().parent.as_uri() + "/"
    page.on(
        "console",
        lambda m: (
            problems.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning")
            else None
        ),
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on(
        "request",
        # The page itself, or a link followed to a report beside it: nothing else.
        lambda r: (
            problems.append(f"request: {r.url}")
            if r.url != url
            and not (r.is_navigation_request() and r.url.startswith(home))
            else None
        ),
    )
    page.goto(url, wait_until="load")
    page.wait_for_timeout(300)
    return page, problems


def test_report_in_chromium(browser, finished_run):
    result, reports = finished_run
    run_dir = reports / result["run_id"]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    page, problems = _open(browser, run_dir / "report.html")
    assert problems == []
    # The numbers on the page are metrics.json's.
    for s in metrics["summary"]:
        row = page.locator(f'#summary tr[data-method="{s["method"]}"]')
        shown = row.locator('td[data-metric="auprc_mean"]').inner_text()
        assert shown.rstrip(" ★") == f"{s['auprc_mean']:.4f}"
        shown = row.locator('td[data-metric="roc_auc_mean"]').inner_text()
        assert shown.rstrip(" ★") == f"{s['roc_auc_mean']:.4f}"
    assert metrics["comparison"]["headline"] in page.locator("#headline").inner_text()
    assert page.locator("svg.chart").count() >= 8
    # The script ran under the CSP: toggles shown, a method hidden everywhere.
    assert page.locator("#toggles").is_visible()
    page.locator('#toggles input[data-toggle="smote"]').uncheck()
    assert page.locator('polyline[data-series="smote"]').first.is_hidden()
    assert "off" in page.locator('#summary tr[data-method="smote"]').get_attribute(
        "class"
    )
    page.locator('#toggles input[data-toggle="smote"]').check()
    # Hovering a PR curve shows the value of the nearest point.
    line = page.locator("#curves ~ .charts polyline[data-xy]").first
    line.scroll_into_view_if_needed()
    x, y = line.evaluate(
        """l => {
            const pts = l.points, p = pts.getItem(Math.floor(pts.numberOfItems / 2));
            const m = l.getScreenCTM();
            return [p.x * m.a + p.y * m.c + m.e, p.x * m.b + p.y * m.d + m.f];
        }"""
    )
    page.mouse.move(x + 1, y + 1)
    tip = page.locator(".tip")
    assert tip.is_visible() and "recall" in tip.inner_text()
    page.screenshot(path=run_dir / "report-screenshot.png", full_page=True)
    assert (run_dir / "report-screenshot.png").stat().st_size > 10_000
    assert problems == []
    page.context.close()


def test_report_is_complete_without_javascript(browser, finished_run):
    result, reports = finished_run
    page, problems = _open(
        browser, reports / result["run_id"] / "report.html", javascript=False
    )
    assert problems == []
    assert page.locator("#toggles").is_hidden()  # useless without a script
    assert page.locator("#summary tbody tr").count() == len(
        json.loads((reports / result["run_id"] / "metrics.json").read_text())["summary"]
    )
    assert page.locator("svg.chart").count() >= 8
    page.context.close()


def test_index_in_chromium(browser, finished_run):
    result, reports = finished_run
    page, problems = _open(browser, reports / "index.html")
    assert problems == []
    link = page.locator(f'a[href="{result["run_id"]}/report.html"]')
    assert link.count() == 1
    # Drift, rows, frauds, each method; the champion's chart once one is scored.
    metrics = json.loads((reports / result["run_id"] / "metrics.json").read_text())
    scored = (metrics.get("monitoring") or {}).get("status") == "scored"
    assert page.locator("svg.chart").count() == 4 + scored
    page.screenshot(path=reports / "index-screenshot.png", full_page=True)
    link.click()
    page.wait_for_load_state("load")
    assert page.url.endswith(f"{result['run_id']}/report.html")
    assert problems == []
    page.context.close()


def test_another_tables_report_in_chromium(browser, mixed_run):
    """A report on a table of another shape: its own column names, bars for its
    categorical columns, the schema listed, no console errors or requests."""
    run_dir = Path(mixed_run["run_dir"])
    metrics = json.loads((run_dir / "metrics.json").read_text())
    page, problems = _open(browser, run_dir / "report.html")
    assert problems == []
    summary = page.locator("#schema-summary").inner_text()
    assert "is_fraud" in summary and "tx_datetime" in summary
    assert page.locator("#folds tbody tr").count() == len(metrics["folds"])
    page.locator("#schema-summary summary").click()
    assert (
        page.locator("#schema-table tr").count()
        == len(metrics["schema"]["columns"]) + 1
    )
    for s in metrics["summary"]:
        row = page.locator(f'#summary tr[data-method="{s["method"]}"]')
        shown = row.locator('td[data-metric="auprc_mean"]').inner_text()
        assert shown.rstrip(" ★") == f"{s['auprc_mean']:.4f}"
    # The distribution charts are the detectors' top features, under their names.
    titles = [
        t
        for t in page.locator("#fidelity ~ .charts svg > title").all_text_contents()
        if t.endswith(": real vs synthetic frauds")
    ]
    assert len(titles) == 6
    features = [t.split(":")[0] for t in titles]
    assert set(features) <= set(metrics["results"][0]["feature_importance"])
    if any(
        metrics["fidelity"]["views"]["histograms"][f].get("kind") == "categorical"
        for f in features
    ):
        assert page.locator("svg.bars rect[data-series]").count() > 0
    assert page.locator("#fidelity-columns tr").count() > 10
    page.screenshot(path=run_dir / "report-screenshot.png", full_page=True)
    assert problems == []
    page.context.close()


def test_the_morning_page_fits_a_1280_pixel_window(browser, tmp_path):
    """Ten nights on a source with a long path: no horizontal scrolling at 1280
    pixels, every chart's title inside its chart, the alert marks drawn."""
    from pipeline.report.morning import render_index
    from tests.helpers import ten_nights

    nights = ten_nights()
    (tmp_path / "index.html").write_text(render_index(list(reversed(nights))))
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto((tmp_path / "index.html").resolve().as_uri(), wait_until="load")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    cut = page.evaluate(
        """[...document.querySelectorAll('svg.chart')].filter(svg => {
            const t = svg.querySelector('.chart-title');
            const box = t.getBBox();
            return box.x < 0 || box.x + box.width > svg.viewBox.baseVal.width;
        }).length"""
    )
    assert cut == 0
    assert page.locator("svg.chart").count() == 5
    assert page.locator("rect.alert-mark").count() == 10
    page.screenshot(path=tmp_path / "index-1280.png", full_page=True)
    context.close()
