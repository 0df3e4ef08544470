import re

import pytest

from pipeline.report.morning import render_index
from pipeline.report.render import render_report
from tests.helpers import demo_metrics, ten_nights

CURVES = {
    kind: {
        m: {0: {"x": [0, 0.5, 1], "y": [1, 0.8, 0.1]}}
        for m in ("none", "smote", "cwgan_gp")
    }
    for kind in ("pr", "roc")
}


def test_report_is_self_contained_and_shows_every_method():
    html = render_report(demo_metrics(), CURVES)
    for method in ("none", "smote", "cwgan_gp"):
        assert f'data-method="{method}"' in html
    _check_one_hashed_inline_script(html)
    # No resource from anywhere: no src/href to a URL, no @import, no url().
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', html)
    assert "@import" not in html and "url(" not in html
    assert 'class="best" data-metric="auprc_mean">0.8300' in html  # smote's mean
    assert "cwgan_gp vs none: -0.010 AUPRC" in html  # a generated verdict line
    # The headline decides the question (the GAN against none); smote, +0.02
    # on every split, is a secondary "better" that survives Holm.
    assert "cwgan_gp is worse than no resampling (none) on AUPRC: -0.010" in html
    assert "compared with none" in html and "better: smote, none worse" in html
    assert "DEMO DATA" not in html


def _check_one_hashed_inline_script(html):
    """One inline script, no src, allowed by its sha256 in the CSP and nothing else."""
    import base64
    import hashlib

    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, flags=re.S)
    assert len(scripts) == 1
    attrs, body = scripts[0]
    assert "src" not in attrs
    digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert f"script-src 'sha256-{digest}'" in csp.group(1)
    assert "default-src 'none'" in csp.group(1)
    assert "unsafe-inline'" not in csp.group(1).split("script-src")[1]


def test_report_draws_every_chart_with_three_splits():
    metrics = demo_metrics()
    curves = {
        **CURVES,
        **{
            kind: {
                m: {"x": [0, 1], "y": [1, 0.5]} for m in ("none", "smote", "cwgan_gp")
            }
            for kind in ("pr_mean", "roc_mean")
        },
    }
    grid = [[0.0] * 30 for _ in range(30)]
    grid[0][1] = 0.4
    metrics["fidelity"] = {
        "views": {
            "features": [f"V{i}" for i in range(30)],
            "n_real": 98,
            "histograms": {
                "V14": {
                    "edges": [0, 1, 2],
                    "density": {
                        "real": [0.5, 0.5],
                        "cwgan_gp": [1, 0],
                        "smote": [0, 1],
                    },
                    "n": {"real": 98, "cwgan_gp": 50, "smote": 50},
                },
            },
            "corr_diff": {"cwgan_gp": grid, "smote": grid},
        }
    }
    html = render_report(metrics, curves)
    assert "Precision–recall, mean of 3 splits" in html
    assert "ROC, mean of 3 splits" in html
    assert "Paired Δ AUPRC vs none" in html
    assert "Recall at precision 0.90" in html
    assert "V14: real vs synthetic frauds" in html
    assert "real test frauds (n=98)" in html
    assert html.count('class="chart heatmap"') == 2
    assert "V0 × V1: +0.40" in html
    # The dose-response charts: validation and test AUPRC against rows added,
    # each resampling method a line, none a dashed level.
    assert "Validation AUPRC against rows added" in html
    assert "Test AUPRC against rows added" in html
    section = html.split('id="amounts"')[1].split('id="curves"')[0]
    assert section.count('data-series="smote"') >= 2
    assert 'stroke-dasharray="5 3" data-series="none"' in section
    grid = section.split('id="amount-grid"')[1]
    assert grid.count("<tr data-series=") == 6  # 2 methods x 3 amounts
    assert "3 of 3" in grid  # the largest amount was chosen on every split
    # Toggles exist for every method (shown by the script; hidden without it).
    for method in ("none", "smote", "cwgan_gp"):
        assert f'data-toggle="{method}"' in html
    # Data-derived series names become data attributes, escaped.
    assert 'data-series="cwgan_gp"' in html


def test_demo_banner():
    assert "DEMO DATA" in render_report(demo_metrics(demo=True), CURVES)


def test_data_derived_strings_are_escaped():
    html = render_report(demo_metrics(path="<script>alert(1)</script>.csv"), CURVES)
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    index = render_index([demo_metrics(path="<script>x</script>")])
    assert "<script>x</script>" not in index


def test_index_lists_runs_and_charts_history():
    runs = [demo_metrics(run_id=f"2026010{i}T000000Z-abc12{i}") for i in range(1, 4)]
    html = render_index(runs)
    for run in runs:
        assert f'href="{run["run_id"]}/report.html"' in html
    assert "<svg" in html


def test_artifact_texts_escape_untrusted_paths():
    from pipeline.report.summary import summary_markdown, summary_table

    md = summary_markdown(
        demo_metrics(path="x`<script>alert(1)</script>`.csv"), "/r/`x`.html"
    )
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert md.count("`") % 2 == 0  # every code span closed: nothing escapes it
    assert "smote vs none: +0.020 AUPRC" in md
    rows = summary_table(demo_metrics())
    assert [r["method"] for r in rows] == ["none", "smote", "cwgan_gp"]
    assert rows[1]["delta_vs_none"] == 0.02 and rows[1]["decision"] == "better"


def test_out_of_time_figures_beside_the_random_split_run():
    from pipeline.evaluation.comparison import random_split_reference

    earlier = demo_metrics(run_id="20251231T000000Z-random")
    metrics = demo_metrics()
    metrics["folds"] = [
        {"fold": 0, "train": ["a", "b"], "validation": ["b", "c"], "test": ["d", "e"]}
    ]
    from pipeline.data.schema import KAGGLE

    metrics["schema"] = KAGGLE.to_dict()
    metrics["config"]["split"] = {
        "mode": "rolling", "train_window": "24h", "validation_window": "4h",
        "delay": "2h", "test_window": "6h",
    }  # fmt: skip
    html = render_report(metrics, CURVES)
    assert 'id="no-random-reference"' in html and 'id="out-of-time"' not in html
    for s in earlier["summary"]:
        s["auprc_mean"] += 0.05  # the random splits flatter every method
    metrics["random_split_reference"] = random_split_reference(earlier)
    assert metrics["random_split_reference"]["methods"]["smote"]["auprc"] == (
        pytest.approx(0.88)
    )
    html = render_report(metrics, CURVES)
    table = html[html.index('id="out-of-time"') :]
    assert "20251231T000000Z-random" in html
    assert "<td>smote</td><td>0.8300</td><td>0.8800</td><td>-0.050</td>" in table
    assert random_split_reference(None) is None


def test_unseen_categories_in_the_drift_section_and_the_headline():
    import numpy as np

    from pipeline.evaluation.drift import feature_drift, unseen_categories

    rng = np.random.default_rng(0)
    metrics = demo_metrics()
    metrics["drift"] = feature_drift(
        rng.integers(0, 3, (200, 1)).astype(float),
        rng.integers(0, 3, (100, 1)).astype(float),
        ["channel"],
        [0],
    )
    calm = {"channel": np.zeros(100, dtype=bool)}
    metrics["drift"]["unseen"] = unseen_categories(
        {"validation": (calm, 100, None), "test": (calm, 100, None)}
    )
    html = render_report(metrics, CURVES)
    assert 'id="unseen-table"' in html and 'id="unseen-alert"' not in html
    new = {"channel": np.arange(100) < 7}  # 7 % of the test rows
    metrics["drift"]["unseen"] = unseen_categories(
        {"validation": (calm, 100, None), "test": (new, 100, None)}
    )
    html = render_report(metrics, CURVES)
    headline = html[html.index('id="unseen-alert"') :]
    assert '<span class="mono">channel</span>, more than 1 %' in headline
    table = html[html.index('id="unseen-table"') :]
    assert '<td class="warning">7 (7.00 %)</td>' in table
    assert "<td>0 (0.00 %)</td>" in table
    metrics["drift"]["unseen"] = unseen_categories({"test": ({}, 100, None)})
    assert "No categorical column" in render_report(metrics, CURVES)


def test_the_morning_page_shows_each_night_and_marks_its_alerts():
    from pipeline.report.morning import night_figures

    nights = ten_nights()
    figures = [night_figures(m) for m in nights]
    assert [f["alerts"] for f in figures if f["alerts"]] == [
        ["fraudaug.champion.degraded"],
        ["fraudaug.data.unchanged"],
    ]
    # What arrived each night: its new partition (nothing on the quiet night).
    assert [f["rows"] for f in figures[6:9]] == [146_000, 0, 148_000]
    assert figures[0]["rows"] == nights[0]["data"]["rows"]  # first night: the table
    # The challenger each night chose on validation rows (smote beats none's
    # validation mean by more than the ROPE there); none on the quiet night.
    assert figures[7]["challenger"] is None and figures[3]["challenger"] == "smote"
    html = render_index(list(reversed(nights)))
    assert html.count('class="alert-mark"') == 2 * 5  # two nights, five charts
    assert html.count('<tr class="alerted">') == 2
    assert "champion.degraded" in html and "data.unchanged" in html
    assert "no new data" in html and "<b>decayed</b>" in html
    # The long source path is shortened, whole on hover.
    source = nights[0]["data"]["path"]
    assert f'title="{source}"' in html and "…" + source[-26:] in html
    for title in (
        "The champion on each night&#39;s newest data",
        "Drift: the largest PSI, training vs test rows",
        "Rows that arrived",
        "Frauds that arrived",
        "Mean test auprc per method, run by run",
    ):
        assert title in html
