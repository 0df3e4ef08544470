"""What sampling the training rows costs: ``python -m benchmarks.sampling DATA
--schema FILE``.

On a multi-day table (e.g. ``fraudaug demo-data --kind transactions --rows
1400000``), out of time as a nightly run judges (the default profile's rolling
folds), each method's detector is fitted with the legitimate training rows kept
at each share (1: all of them, no sampling; then 0.3, 0.1, 0.03: every fraud and
that share of the legitimate rows, weighted back, validation rows sampled and
weighted the same way — what ``sampling.max_train_rows`` does above its budget),
for every fold and several seeds of the sample. Test rows are never sampled.
Prints one JSON object — per method, share, fold and seed the test AUPRC,
precision top-k, fit seconds and rows; per method and share the paired
difference to share 1 (mean over folds and seeds, its 95 % t-interval) — and
writes it to ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
SHARES = (1.0, 0.3, 0.1, 0.03)


def _budget(inputs, share: float) -> int | None:
    """The ``max_train_rows`` that keeps ``share`` of the fold's legitimate
    training rows (every fraud kept): ``None`` for share 1."""
    if share >= 1.0:
        return None
    from pipeline.core.artifacts import load_parquet_rows
    from pipeline.features.rows import load_splits
    from pipeline.features.splits import subset_rows

    transformer = json.loads(Path(inputs.transformer_path).read_text())
    label = transformer["schema"]["label"]["column"]
    rows = subset_rows(
        load_splits(inputs.splits_path, inputs.split), inputs.split, "train"
    )
    y = load_parquet_rows(inputs.frame_path, rows, [label])[label].to_numpy()
    return int((y == 1).sum() + round(share * (y == 0).sum()))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="a multi-day table (.parquet or .csv)")
    parser.add_argument("--schema", required=True, help="its schema file")
    parser.add_argument("--shares", type=float, nargs="+", default=list(SHARES))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--methods", nargs="+", default=["none", "smote"])
    parser.add_argument("--profile", default="default")
    parser.add_argument(
        "--alerts-per-day",
        type=int,
        default=100,
        help="evaluation.alerts_per_day (raise it where a day holds more frauds "
        "than alerts: precision top-k is 1 for every method there)",
    )
    args = parser.parse_args(argv)

    from pipeline.core.config import run_seeds
    from pipeline.data.schema import load_schema
    from pipeline.evaluation.amounts import choose_amounts
    from pipeline.evaluation.statistics import t_interval
    from pipeline.features.rows import SplitInputs
    from pipeline.run.fit import stage_fit_detector
    from pipeline.run.plan import load_config
    from pipeline.run.prepare import stage_ingest, stage_preprocess

    schema = load_schema(args.schema)
    # The methods' one-amount grid (smote: one new row per real fraud, and the
    # shared ratio), out of time as a nightly run judges.
    config = load_config(
        args.profile,
        overrides={
            "split": {"mode": "rolling"},
            "sampling": {"max_train_rows": None},
            "evaluation": {
                "amount_grid": [1.0],
                "alerts_per_day": args.alerts_per_day,
            },
        },
    )
    n_splits = config.split.n_splits
    records: list[dict] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fraudaug-sampling-") as tmp:
        tmp = Path(tmp)
        data = stage_ingest(args.data, tmp / "cache", schema)
        prepared = stage_preprocess(
            data["frame_path"], tmp / "run", config, [0] * n_splits, schema=schema
        )
        for seed in args.seeds:
            seeds = run_seeds(seed, n_splits)
            for split in range(n_splits):
                base = SplitInputs(
                    data["frame_path"],
                    prepared["splits_path"],
                    prepared["transformer_paths"][split],
                    split,
                    rows_seed=seeds["rows"][split],
                    halves_seed=seeds["halves"][split],
                )
                for share in args.shares:
                    budget = _budget(base, share)
                    inputs = SplitInputs(
                        base.frame_path,
                        base.splits_path,
                        base.transformer_path,
                        split,
                        max_train_rows=budget,
                        rows_seed=base.rows_seed,
                        halves_seed=base.halves_seed,
                    )
                    for method in args.methods:
                        start = time.perf_counter()
                        fit = stage_fit_detector(
                            inputs,
                            method,
                            config,
                            sampler_seed=seeds["sampler"][split],
                            detector_seed=seeds["detector"][split],
                            scores_path=tmp
                            / f"{method}-{seed}-{split}-{share}.parquet",
                        )
                        (chosen,), _ = choose_amounts(
                            [fit], "per_split", config.evaluation.primary_metric
                        )
                        records.append(
                            {
                                "method": method,
                                "share": share,
                                "fold": split,
                                "seed": seed,
                                "auprc": round(chosen["auprc"], 6),
                                "precision_top_k": round(chosen["precision_top_k"], 6),
                                "validation_auprc": round(
                                    chosen["validation_auprc"], 6
                                ),
                                "n_train": chosen["n_train"],
                                "n_added": chosen["n_added"],
                                "n_test": chosen["n_test"],
                                "n_test_frauds": chosen["n_test_frauds"],
                                "fit_seconds": chosen["fit_seconds"],
                                "stage_seconds": round(time.perf_counter() - start, 2),
                            }
                        )
                        print(json.dumps(records[-1]), flush=True)
    summary: dict = {}
    for method in args.methods:
        full = {
            (r["fold"], r["seed"]): r
            for r in records
            if r["method"] == method and r["share"] >= 1.0
        }
        for share in args.shares:
            mine = [r for r in records if r["method"] == method and r["share"] == share]
            entry: dict = {
                "n_train_mean": round(float(np.mean([r["n_train"] for r in mine]))),
                "stage_seconds_mean": round(
                    float(np.mean([r["stage_seconds"] for r in mine])), 2
                ),
            }
            for metric in ("auprc", "precision_top_k"):
                values = np.array([r[metric] for r in mine])
                entry[metric] = round(float(values.mean()), 4)
                if full and share < 1.0:
                    diffs = np.array(
                        [r[metric] - full[(r["fold"], r["seed"])][metric] for r in mine]
                    )
                    sd, ci = t_interval(diffs)
                    entry[f"{metric}_diff"] = round(float(diffs.mean()), 4)
                    entry[f"{metric}_diff_sd"] = None if sd is None else round(sd, 4)
                    entry[f"{metric}_diff_ci95"] = (
                        None if ci is None else [round(v, 4) for v in ci]
                    )
                    entry[f"{metric}_diff_range"] = [
                        round(float(diffs.min()), 4),
                        round(float(diffs.max()), 4),
                    ]
            summary.setdefault(method, {})[str(share)] = entry
    result = {
        "data": str(args.data),
        "rows": data["rows"],
        "frauds": data["frauds"],
        "profile": args.profile,
        "alerts_per_day": args.alerts_per_day,
        "folds": prepared["folds"],
        "seeds": args.seeds,
        "summary": summary,
        "records": records,
        "seconds": round(time.perf_counter() - started, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "cpu_count": len(os.sched_getaffinity(0)),
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"sampling-{result['measured_at'][:10]}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "records"}, indent=2))
    return result


if __name__ == "__main__":
    main()
