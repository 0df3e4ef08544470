"""Every claim restated: ``python -m benchmarks.verdicts LABEL=METRICS.json ...``.

Reads runs' ``metrics.json`` (any schema version: only their per-split
``results`` and configuration are used) and states each run's comparison under
today's statistics (:func:`pipeline.evaluation.comparison.compare_methods`: the
corrected resampled t at today's default rho, the measured one, with the
question's decision at Nadeau & Bengio's heuristic rho beside it, Holm, the correlated
Bayesian t-test at today's default ROPE of the run's primary metric, or
``--rope``) and today's choice of challenger on validation rows
(:func:`pipeline.evaluation.selection.choose_challenger`) beside what the run
said when it ran (its headline, its registered challenger) and the best test
mean. Per run: the data,
the splits, ρ, the ROPE, the headline then and now, per method its mean and
plain and corrected intervals (and its other figures' means), and per comparison
with ``none`` (and the GAN's with the best SMOTE-family method) the difference,
both intervals, whether each called it, the three probabilities, the decision,
the splits that would decide and the resolution. Prints one JSON object and writes it to
``benchmarks/results/verdicts-<date>.json`` (the docs' results page shows it).
"""

from __future__ import annotations

import argparse
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import rounded, write_result


def restate(label: str, metrics: dict[str, Any], rope: float | None = None) -> dict:
    """One run's comparison under today's statistics beside what it said."""
    from pipeline.core.config import RopeConfig
    from pipeline.evaluation.comparison import compare_methods
    from pipeline.evaluation.correlation import HEURISTIC, resolve_rho
    from pipeline.evaluation.metrics import METRICS, summarise
    from pipeline.evaluation.selection import choose_challenger
    from pipeline.evaluation.statistics import t_interval
    from pipeline.resampling import registry

    config = metrics.get("config") or {}
    metric = metrics.get("primary_metric") or "auprc"
    # Today's default ROPE of the run's metric, whatever the run was set to.
    rope = rope if rope is not None else getattr(RopeConfig(), metric)
    results = metrics["results"]
    mode = (config.get("split") or {}).get("mode")
    roles = registry.roles()
    rho, rho_source = resolve_rho("measured", results, mode)
    now = compare_methods(
        results,
        roles,
        metric,
        rope=rope,
        unit="fold" if mode == "rolling" else "split",
        rho=rho,
        rho_source=rho_source,
        heuristic_rho=resolve_rho(HEURISTIC, results, mode)[0],
    )
    selection = choose_challenger(
        results,
        {m: int(registry.get(m).complexity) for m in {r["method"] for r in results}},
        metric,
        rope,
        "fold" if mode == "rolling" else "split",
        rho,
    )
    best_on_test = max(summarise(results), key=lambda s: s[f"{metric}_mean"])
    before = {
        (c["method"], c["baseline"]): c
        for c in (metrics.get("comparison") or {}).get("comparisons", [])
    }
    summary = []
    for s in summarise(results):
        values = [r[metric] for r in results if r["method"] == s["method"]]
        summary.append(
            {
                "method": s["method"],
                f"{metric}_mean": rounded(s[f"{metric}_mean"]),
                "ci95_plain": rounded(t_interval(values, bounded=True)[1]),
                "ci95_corrected": rounded(s[f"{metric}_ci95"]),
                **{
                    f"{other}_mean": rounded(s.get(f"{other}_mean"))
                    for other in METRICS
                    if other != metric and s.get(f"{other}_mean") is not None
                },
            }
        )
    comparisons = []
    for c in now["comparisons"]:
        if c["baseline"] != roles["reference"] and c["method"] != roles["question"]:
            continue
        old = before.get((c["method"], c["baseline"]), {})
        plain = c["ci95_plain"]
        comparisons.append(
            {
                "method": c["method"],
                "baseline": c["baseline"],
                "mean_diff": rounded(c["mean_diff"]),
                "ci95_plain": rounded(plain),
                "plain_called_it": bool(plain and (plain[0] > 0 or plain[1] < 0)),
                "p_wilcoxon_then": rounded(old.get("p_wilcoxon")),
                "ci95_corrected": rounded(c["ci95_corrected"]),
                "p_holm": rounded(c["p_holm"]),
                "significant_now": c["significant"],
                "p_better": rounded(c["p_better"], 3),
                "p_equivalent": rounded(c["p_equivalent"], 3),
                "p_worse": rounded(c["p_worse"], 3),
                "decision": c["decision"],
                "claim": c["claim"],
                "splits_to_decide": c["splits_to_decide"],
                "smallest_better": rounded(c["smallest_better"]),
                "resolution": rounded(c["resolution"]),
            }
        )
    data = metrics.get("data") or {}
    return {
        "label": label,
        "run_id": metrics.get("run_id"),
        "data": os.path.basename(str(data.get("path", ""))),
        "rows": data.get("rows"),
        "frauds": data.get("frauds"),
        "profile": metrics.get("profile"),
        "split_mode": mode,
        "n_splits": metrics.get("n_splits"),
        "metric": metric,
        "rho": rounded(now["rho"]),
        "rho_source": now["rho_source"],
        "rho_heuristic": rounded((now["heuristic"] or {}).get("rho")),
        "question_heuristic": (now["heuristic"] or {})
        .get("decision", {})
        .get("decision"),
        "rope": rope,
        "headline_then": (metrics.get("comparison") or {}).get("headline"),
        "headline_now": now["headline"],
        "challenger_then": (metrics.get("registry") or {})
        .get("challenger", {})
        .get("method"),
        "best_test_mean": best_on_test["method"],
        "challenger_now": selection.chosen if selection else None,
        "challenger_reason": selection.reason if selection else None,
        "summary": summary,
        "comparisons": comparisons,
    }


def rope_argument(parser: argparse.ArgumentParser) -> None:
    """``--rope``: the ROPE runs are restated at (:func:`restate`'s ``rope``)."""
    parser.add_argument(
        "--rope",
        type=float,
        default=None,
        help="default: today's evaluation.rope of each run's primary metric",
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "runs", nargs="+", help="LABEL=path/to/metrics.json (LABEL names the run)"
    )
    rope_argument(parser)
    parser.add_argument("--out", default=None, help="default: benchmarks/results/")
    args = parser.parse_args(argv)
    runs = []
    for item in args.runs:
        label, _, path = item.rpartition("=")
        metrics = json.loads(Path(path).read_text())
        runs.append(restate(label or Path(path).parent.name, metrics, args.rope))
    result = {
        "benchmark": "verdicts",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": runs,
    }
    write_result(result, "verdicts", args.out)
    return result


if __name__ == "__main__":
    main()
