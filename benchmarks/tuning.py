"""Does tuning each method's detector change the answer?
``python -m benchmarks.tuning LABEL=UNTUNED/metrics.json,TUNED/metrics.json ...``

Each pair is two runs of the same table, profile, splits and seed, one with
``detector.tune`` off and one on (every method's XGBoost searched on its
validation rows under the same budget: :mod:`pipeline.detector.tuning`). Both
are restated under today's statistics (:func:`benchmarks.verdicts.restate`)
and set side by side:

- **decisions**: the question's decision, each comparison's decision and claim
  (after Holm), the challenger chosen on validation rows, and the best
  SMOTE-family method the question is set against; ``changed`` lists every one
  that differs;
- **per method**: its mean test figure untuned and tuned with the paired
  per-split difference (tuned minus untuned, its corrected interval), its
  difference from ``none`` untuned and tuned (the question Elor &
  Averbuch-Elor 2022 ask: does balancing still help a tuned detector?), the
  validation gain its searches found (the best trial over the untuned first
  trial, on the rows they searched: optimistic by construction), the share of
  fits whose search kept the untuned settings and the median chosen settings;
- **cost**: the runs' fit-stage task-seconds and wall time, tuned over untuned.

Prints one JSON object and writes it to ``benchmarks/results/tuning-<date>.json``
(the docs' results page shows it).
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import rounded, write_result
from benchmarks.verdicts import restate, rope_argument


def _by_split(metrics: dict[str, Any], key: str) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for r in metrics["results"]:
        if r.get(key) is not None:
            out.setdefault(r["method"], {})[r["split"]] = float(r[key])
    return out


def _fit_seconds(metrics: dict[str, Any]) -> float | None:
    for stage in (metrics.get("resources") or {}).get("stages", []):
        if stage["stage"] == "fit-detector":
            return float(stage["seconds"])
    return None


def _searches(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What one method's searches chose, over its splits' records."""
    tuned = [r for r in records if r.get("tuned")]
    if not tuned:
        return None
    params = [r["tuned"]["params"] for r in tuned]
    gains = [
        r["validation_auprc"] - r["tuned"]["untuned_validation_auprc"] for r in tuned
    ]
    return {
        "fits": len(tuned),
        "trials": tuned[0]["tuned"]["trials"],
        "kept_untuned": rounded(float(np.mean([g <= 1e-12 for g in gains])), 3),
        "validation_gain_mean": rounded(float(np.mean(gains))),
        "median_params": {
            k: rounded(float(np.median([p[k] for p in params])), 3)
            for k in params[0]
            if all(k in p for p in params)
        },
    }


def compare_pair(
    label: str,
    untuned: dict[str, Any],
    tuned: dict[str, Any],
    rope: float | None = None,
) -> dict[str, Any]:
    """One table's untuned and tuned runs side by side (see the module)."""
    from pipeline.evaluation.statistics import corrected_t_interval
    from pipeline.resampling import registry

    before = restate(f"{label} untuned", untuned, rope)
    after = restate(f"{label} tuned", tuned, rope)
    metric, rho = before["metric"], before["rho"]
    roles = registry.roles()
    # Each decision untuned and tuned; a comparison's also its claim (after Holm).
    decisions = [
        _decision("question", _question(before, roles), _question(after, roles)),
        _decision("challenger", before["challenger_now"], after["challenger_now"]),
        _decision(
            "best_smote_family", _baseline(before, roles), _baseline(after, roles)
        ),
    ]
    claims = {(c["method"], c["baseline"]): c for c in before["comparisons"]}
    for c in after["comparisons"]:
        old = claims.get((c["method"], c["baseline"]), {})
        decisions.append(
            _decision(
                f"{c['method']} vs {c['baseline']}",
                old.get("decision"),
                c["decision"],
                (old.get("claim"), c["claim"]),
            )
        )
    changed = [d["what"] for d in decisions if d["changed"]]
    test = {"untuned": _by_split(untuned, metric), "tuned": _by_split(tuned, metric)}
    methods = []
    for method, values in test["untuned"].items():
        done = test["tuned"].get(method, {})
        splits = sorted(set(values) & set(done))
        diffs = np.array([done[s] - values[s] for s in splits])
        # At the run's own rho: the two arms share each split's rows.
        interval = corrected_t_interval(diffs, rho)[1]
        vs_none = {}
        for arm in ("untuned", "tuned"):
            mine, none = test[arm].get(method, {}), test[arm].get("none", {})
            common = sorted(set(mine) & set(none))
            if method != "none" and common:
                vs_none[arm] = rounded(
                    float(np.mean([mine[s] - none[s] for s in common]))
                )
        methods.append(
            {
                "method": method,
                f"{metric}_untuned": rounded(float(np.mean(list(values.values())))),
                f"{metric}_tuned": rounded(float(np.mean(list(done.values()))))
                if done
                else None,
                "tuned_minus_untuned": rounded(float(diffs.mean()))
                if len(diffs)
                else None,
                "tuned_minus_untuned_per_split": rounded(diffs.tolist()),
                "ci95_corrected": rounded(interval),
                "vs_none_untuned": vs_none.get("untuned"),
                "vs_none_tuned": vs_none.get("tuned"),
                "searches": _searches(
                    [r for r in tuned["results"] if r["method"] == method]
                ),
            }
        )
    seconds = {"untuned": _fit_seconds(untuned), "tuned": _fit_seconds(tuned)}
    walls = {
        "untuned": untuned.get("duration_seconds"),
        "tuned": tuned.get("duration_seconds"),
    }
    return {
        "label": label,
        "data": before["data"],
        "rows": before["rows"],
        "frauds": before["frauds"],
        "profile": before["profile"],
        "split_mode": before["split_mode"],
        "n_splits": before["n_splits"],
        "metric": metric,
        "rope": before["rope"],
        "rho": rho,
        "run_ids": [untuned.get("run_id"), tuned.get("run_id")],
        "headline_untuned": before["headline_now"],
        "headline_tuned": after["headline_now"],
        "decisions": decisions,
        "changed": changed,
        "methods": methods,
        "cost": {
            "fit_task_seconds": seconds,
            "fit_ratio": rounded(seconds["tuned"] / seconds["untuned"], 2)
            if seconds["untuned"] and seconds["tuned"]
            else None,
            "run_seconds": walls,
            "run_ratio": rounded(walls["tuned"] / walls["untuned"], 2)
            if walls["untuned"] and walls["tuned"]
            else None,
        },
    }


def _decision(
    what: str, untuned: Any, tuned: Any, claims: tuple[Any, Any] = (None, None)
) -> dict[str, Any]:
    return {
        "what": what,
        "untuned": untuned,
        "tuned": tuned,
        "untuned_claim": claims[0],
        "tuned_claim": claims[1],
        "changed": untuned != tuned or claims[0] != claims[1],
    }


def _question(run: dict[str, Any], roles: dict[str, Any]) -> str | None:
    """The question's decision: the ``question`` role against the ``reference``."""
    for c in run["comparisons"]:
        if c["method"] == roles["question"] and c["baseline"] == roles["reference"]:
            return c["decision"]
    return None


def _baseline(run: dict[str, Any], roles: dict[str, Any]) -> str | None:
    """The other method the question is set against: the best SMOTE-family
    method on validation rows, when the run compared one."""
    for c in run["comparisons"]:
        if c["method"] == roles["question"] and c["baseline"] != roles["reference"]:
            return c["baseline"]
    return None


def _tuned(metrics: dict[str, Any]) -> bool:
    return bool(((metrics.get("config") or {}).get("detector") or {}).get("tune"))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "pairs",
        nargs="+",
        help="LABEL=untuned/metrics.json,tuned/metrics.json (LABEL names the table)",
    )
    rope_argument(parser)
    parser.add_argument("--out", default=None, help="default: benchmarks/results/")
    args = parser.parse_args(argv)
    pairs = []
    for item in args.pairs:
        label, _, paths = item.rpartition("=")
        untuned_path, _, tuned_path = paths.partition(",")
        untuned = json.loads(Path(untuned_path).read_text())
        tuned = json.loads(Path(tuned_path).read_text())
        if _tuned(untuned) or not _tuned(tuned):
            # One line and exit code 2, nothing written.
            parser.error(
                f"{label}: the first run must be untuned and the second tuned "
                "(config.detector.tune)"
            )
        pairs.append(compare_pair(label or "run", untuned, tuned, args.rope))
    result = {
        "benchmark": "tuning",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "pairs": pairs,
    }
    write_result(result, "tuning", args.out)
    return result


if __name__ == "__main__":
    main()
