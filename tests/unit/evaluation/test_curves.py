"""Precision-recall and ROC curves averaged over splits."""

import numpy as np
import pandas as pd


def test_mean_curves_average_interpolated_precision_over_splits():
    import pandas as pd
    from sklearn.metrics import precision_recall_curve, roc_curve

    from pipeline.evaluation.curves import curve_points

    rng = np.random.default_rng(0)
    labels = (rng.random(1000) < 0.1).astype(int)
    parts, expected_pr, expected_roc = [], [], []
    grid = np.linspace(0, 1, 101)
    for split, rows in enumerate(np.split(np.arange(1000), 2)):
        score = labels[rows] * rng.random(500) + rng.random(500) * 0.8
        parts.append(
            pd.DataFrame(
                {
                    "split": split,
                    "method": "m",
                    "subset": "test",
                    "row": rows,
                    "score": score,
                }
            )
        )
        p, r, _ = precision_recall_curve(labels[rows], score)
        expected_pr.append([p[r >= g].max() for g in grid])
        fpr, tpr, _ = roc_curve(labels[rows], score)
        expected_roc.append(np.interp(grid, fpr, tpr))
    curves = curve_points(pd.concat(parts), labels)
    assert curves["pr_mean"]["m"]["n_splits"] == 2
    np.testing.assert_allclose(
        curves["pr_mean"]["m"]["y"], np.mean(expected_pr, 0), atol=1e-5
    )
    np.testing.assert_allclose(
        curves["roc_mean"]["m"]["y"], np.mean(expected_roc, 0), atol=1e-5
    )


def test_curves_keep_the_high_precision_corner():
    from pipeline.evaluation.curves import curve_points

    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(50, int), np.zeros(20_000, int)]
    scores = np.r_[rng.uniform(0.5, 1.0, 50), rng.uniform(0.0, 0.6, 20_000)]
    predictions = pd.DataFrame(
        {
            "split": 0,
            "method": "none",
            "subset": "test",
            "row": np.arange(len(labels)),
            "score": scores,
        }
    )
    pr = curve_points(predictions, labels)["pr"]["none"][0]
    assert len(pr["x"]) <= 400
    # Points between recall 0.1 and 0.7 (where precision is still high) survive.
    mid = [p for r, p in zip(pr["x"], pr["y"], strict=True) if 0.1 < r < 0.7]
    assert len(mid) > 10 and min(mid) > 0.9
