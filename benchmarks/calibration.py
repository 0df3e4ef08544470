"""Is the verdict calibrated? ``python -m benchmarks.calibration [--data FILE]``.

On the real sample (``../shared/data/creditcard_sample.csv.gz``: 20,000 rows,
all 492 frauds; any table with ``--schema``), many trials of fraudaug's
protocol, each with its own splits and seeds, each comparing detectors whose
true difference is known:

- **A/A, seeded once per run**: two XGBoost detectors that differ only in their
  seed (the shared detector with ``subsample`` 0.8 and ``colsample_bytree`` 0.5),
  each seed fixed over a trial's splits, as one method's settings are. Their
  difference has no mean over trials, but within a trial it persists from split
  to split (the same trees draw the same columns): the way two methods that are
  equal on average can still differ on one table.
- **A/A, seeded per split**: the same two detectors with a new seed on every
  split (what fraudaug's own seed streams do): the splits' differences share
  nothing but the rows.
- **A known difference**: the first detector against itself trained with a share
  (``--flip``) of its training frauds relabelled as legitimate.

Two protocols at the same number of fits: ``random`` (fraudaug's repeated
stratified 60/20/20 splits of groups of identical rows) and ``rotation``
(stratified 5-fold partitions of the same groups, each fold the test rows once,
the next fold the validation rows, the other three training; a second partition
after five). Each trial's first 3 splits are the ``default`` profile's, all
``--splits`` (10) the ``full`` profile's.

For each design, protocol and number of splits: how often each procedure claims
a difference (nominal 5 % on the A/A designs; power on the known one) — the
plain paired t-test, the corrected resampled t-test (Nadeau & Bengio), the
Wilcoxon test (from 6 splits), and the correlated Bayesian t-test at each
region of practical equivalence of ``--ropes`` (better or worse at P >= 0.95; and
how often it says "equivalent") — with Wilson 95 % intervals, the mean
half-widths of the plain and corrected 95 % intervals, and the spread of the
differences (between a trial's splits, and of the trials' means). Prints one
JSON object and writes it to ``benchmarks/results/calibration-<date>.json``.

The features are the pipeline's model space fitted once on the whole table:
every transform in it is monotone per column, so the trees (split on quantile
bins of the training rows) are those of a transformer fitted on each split's
training rows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
SAMPLE = ROOT.parent / "shared" / "data" / "creditcard_sample.csv.gz"
DETECTORS = ("run_a", "run_b", "split_a", "split_b", "flipped")
DESIGNS = {
    "aa_seeded_per_run": ("run_a", "run_b"),
    "aa_seeded_per_split": ("split_a", "split_b"),
    "known_difference": ("flipped", "run_a"),
}
"""Each design's pair: (method, baseline); its difference is method - baseline."""
PROTOCOL_DETECTORS = {
    "random": DETECTORS,
    "rotation": ("run_a", "run_b", "flipped"),
}
FOLDS = 5

_DATA: dict = {}


def _load(data: str, schema: str) -> None:
    """Each worker reads the table once: the model space, labels and groups."""
    from pipeline.data.ingest import read_transactions
    from pipeline.data.schema import load_schema
    from pipeline.features.splits import row_groups
    from pipeline.features.transformer import TabularTransformer

    table_schema = load_schema(None if schema == "kaggle" else schema)
    frame, _ = read_transactions(data, table_schema)
    y = frame[table_schema.label.column].to_numpy().astype(np.int64)
    compared = [
        c
        for c in table_schema.kept_columns
        if c not in table_schema.id_columns and c in frame
    ]
    transformer = TabularTransformer(table_schema).fit(frame)
    _DATA.update(
        X=transformer.transform(frame).astype(np.float32),
        y=y,
        groups=row_groups(frame[compared]),
        feature_types=transformer.feature_types,
    )


def _random_splits(y, groups, seeds):
    from pipeline.features.splits import make_splits

    frame = make_splits(y, random_states=seeds, groups=groups)
    return [
        {
            subset: frame.loc[
                (frame["split"] == s) & (frame["subset"] == subset), "row"
            ].to_numpy()
            for subset in ("train", "validation", "test")
        }
        for s in range(len(seeds))
    ]


def _rotations(y, groups, seeds, n_splits):
    """Stratified 5-fold partitions of the groups (a fraud group when any row
    is): rotation ``i`` tests fold ``i``, validates on fold ``i + 1``."""
    from sklearn.model_selection import StratifiedKFold

    codes = np.unique(groups, return_inverse=True)[1]
    group_y = np.zeros(codes.max() + 1, dtype=np.int64)
    np.maximum.at(group_y, codes, y)
    out = []
    for seed in seeds:
        fold_of_group = np.empty(len(group_y), dtype=np.int64)
        folds = StratifiedKFold(FOLDS, shuffle=True, random_state=seed % 2**32)
        for k, (_, held) in enumerate(folds.split(group_y, group_y)):
            fold_of_group[held] = k
        fold = fold_of_group[codes]
        for i in range(FOLDS):
            out.append(
                {
                    "train": np.flatnonzero((fold != i) & (fold != (i + 1) % FOLDS)),
                    "validation": np.flatnonzero(fold == (i + 1) % FOLDS),
                    "test": np.flatnonzero(fold == i),
                }
            )
            if len(out) == n_splits:
                return out
    return out


def _fit_score(X, y, split, seed, flip_share=0.0, flip_seed=0, feature_types=None):
    """The shared detector with row and column subsampling: its test AUPRC."""
    from sklearn.metrics import average_precision_score

    from pipeline.core.config import DetectorConfig
    from pipeline.resampling.methods import make_detector

    detector = make_detector(
        DetectorConfig(n_jobs=1), random_state=seed, feature_types=feature_types
    )
    detector.set_params(subsample=0.8, colsample_bytree=0.5)
    train = split["train"]
    y_train = y[train].copy()
    if flip_share:
        frauds = np.flatnonzero(y_train == 1)
        rng = np.random.default_rng(flip_seed)
        flipped = rng.choice(frauds, int(round(flip_share * len(frauds))), False)
        y_train[flipped] = 0
    validation = split["validation"]
    detector.fit(
        X[train],
        y_train,
        eval_set=[(X[validation], y[validation])],
        verbose=False,
    )
    scores = detector.predict_proba(X[split["test"]])[:, 1]
    return float(average_precision_score(y[split["test"]], scores))


def _trial(args: tuple) -> dict:
    """One trial: its splits under each of ``protocols``, every detector's test
    AUPRC on each split."""
    trial, seed, n_splits, flip, protocols = args
    X, y, groups = _DATA["X"], _DATA["y"], _DATA["groups"]
    rng = np.random.default_rng(np.random.SeedSequence([seed, trial]))
    split_seeds = [int(s) for s in rng.integers(0, 2**31, 2 * n_splits)]
    run_a, run_b = (int(s) for s in rng.integers(0, 2**31, 2))
    per_split = rng.integers(0, 2**31, (n_splits, 3))
    out: dict = {}
    for protocol in protocols:
        detectors = PROTOCOL_DETECTORS[protocol]
        splits = (
            _random_splits(y, groups, split_seeds[:n_splits])
            if protocol == "random"
            else _rotations(y, groups, split_seeds[n_splits:], n_splits)
        )
        scores = {d: [] for d in detectors}
        for j, split in enumerate(splits):
            seeds = {
                "run_a": (run_a, 0.0),
                "run_b": (run_b, 0.0),
                "split_a": (int(per_split[j, 0]), 0.0),
                "split_b": (int(per_split[j, 1]), 0.0),
                "flipped": (run_a, flip),
            }
            for d in detectors:
                seed_d, share = seeds[d]
                scores[d].append(
                    _fit_score(
                        X,
                        y,
                        split,
                        seed_d,
                        share,
                        int(per_split[j, 2]),
                        _DATA["feature_types"],
                    )
                )
        out[protocol] = scores
    return out


def _wilson(k: int, n: int) -> list[float]:
    """The Wilson 95 % interval of a rate ``k / n``."""
    if n == 0:
        return [0.0, 1.0]
    z = 1.959964
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(float(centre - half), 4), round(float(centre + half), 4)]


def _rate(claims: list[bool]) -> dict:
    k, n = int(sum(claims)), len(claims)
    return {"rate": round(k / n, 4) if n else None, "ci95": _wilson(k, n)}


def summarise_trials(
    trials: list[dict], *, n_splits: list[int], rho: float, ropes: list[float]
) -> list[dict]:
    """Per design, protocol and number of splits: each procedure's claim rates
    (the Bayesian test's at each of ``ropes``, and how often it says
    "equivalent"), the intervals' widths and the spread of the differences."""
    from scipy import stats

    from pipeline.evaluation.statistics import (
        corrected_t_interval,
        corrected_t_p,
        decide,
        posterior,
        rope_probabilities,
        t_interval,
        wilcoxon_p,
    )

    rows = []
    for design, (method, baseline) in DESIGNS.items():
        for protocol, detectors in PROTOCOL_DETECTORS.items():
            if method not in detectors or baseline not in detectors:
                continue
            for j in n_splits:
                claims: dict[str, list[bool]] = {
                    k: [] for k in ("plain_t", "corrected_t", "wilcoxon")
                }
                bayes = {r: {"claims": [], "equivalent": []} for r in ropes}
                widths_plain, widths_corrected, means, sds = [], [], [], []
                done = [t for t in trials if protocol in t]
                if not done:
                    continue
                for trial in done:
                    scores = trial[protocol]
                    d = np.subtract(scores[method][:j], scores[baseline][:j])
                    means.append(float(d.mean()))
                    sds.append(float(d.std(ddof=1)))
                    _, plain = t_interval(d)
                    _, corrected = corrected_t_interval(d, rho)
                    widths_plain.append((plain[1] - plain[0]) / 2)
                    widths_corrected.append((corrected[1] - corrected[0]) / 2)
                    plain_p = (
                        float(stats.ttest_1samp(d, 0.0).pvalue) if d.std() else 1.0
                    )
                    claims["plain_t"].append(plain_p < 0.05)
                    claims["corrected_t"].append(corrected_t_p(d, rho) < 0.05)
                    if j >= 6:
                        claims["wilcoxon"].append(wilcoxon_p(d) < 0.05)
                    post = posterior(d, rho)
                    for r in ropes:
                        outcome = decide(rope_probabilities(*post, r))
                        bayes[r]["claims"].append(outcome in ("better", "worse"))
                        bayes[r]["equivalent"].append(outcome == "equivalent")
                rows.append(
                    {
                        "design": design,
                        "protocol": protocol,
                        "n_splits": j,
                        "trials": len(done),
                        "mean_difference": round(float(np.mean(means)), 5),
                        "sd_of_trial_means": round(float(np.std(means, ddof=1)), 5),
                        "sd_of_differences": round(float(np.mean(sds)), 5),
                        "half_width_plain": round(float(np.mean(widths_plain)), 5),
                        "half_width_corrected": round(
                            float(np.mean(widths_corrected)), 5
                        ),
                        **{
                            f"claims_{k}": _rate(v) if v else None
                            for k, v in claims.items()
                        },
                        "bayes": [
                            {
                                "rope": r,
                                "claims": _rate(v["claims"]),
                                "equivalent": _rate(v["equivalent"]),
                            }
                            for r, v in bayes.items()
                        ],
                    }
                )
    return rows


def main(argv: list[str] | None = None) -> dict:
    from pipeline.core.artifacts import save_text

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(SAMPLE), help="the table")
    parser.add_argument(
        "--schema", default="kaggle", help="its schema file (default: Kaggle's)"
    )
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument(
        "--rotation-trials",
        type=int,
        default=150,
        help="of the trials, how many also run the rotation protocol",
    )
    parser.add_argument("--splits", type=int, default=10, help="splits a trial")
    parser.add_argument(
        "--flip",
        type=float,
        default=0.8,
        help="share of the training frauds relabelled for the known difference",
    )
    parser.add_argument(
        "--ropes",
        type=float,
        nargs="+",
        default=[0.005, 0.01, 0.02, 0.03],
        help="regions of practical equivalence the Bayesian test is read at",
    )
    parser.add_argument("--raw", default=None, help="also write every trial's AUPRCs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--out", default=None, help="default: benchmarks/results/")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    jobs = [
        (
            t,
            args.seed,
            args.splits,
            args.flip,
            ("random", "rotation") if t < args.rotation_trials else ("random",),
        )
        for t in range(args.trials)
    ]
    trials = []
    with ProcessPoolExecutor(
        args.jobs, initializer=_load, initargs=(args.data, args.schema)
    ) as pool:
        for trial in pool.map(_trial, jobs):
            trials.append(trial)
            if len(trials) % 10 == 0 or len(trials) == len(jobs):
                elapsed = time.perf_counter() - started
                print(
                    f"calibration: {len(trials)}/{len(jobs)} trials, {elapsed:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
    seconds = time.perf_counter() - started
    # rho of a 60/20/20 split (and of a 5-fold rotation: 3 folds train, 1 tests).
    rho = 0.2 / (0.6 + 0.2)
    n_splits = sorted({min(3, args.splits), args.splits})
    result = {
        "benchmark": "calibration",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "data": os.path.basename(args.data),
        "trials": args.trials,
        "rotation_trials": min(args.rotation_trials, args.trials),
        "splits": args.splits,
        "flip": args.flip,
        "ropes": args.ropes,
        "rho": rho,
        "seed": args.seed,
        "seconds": round(seconds, 1),
        "detector": "the shared XGBoost, subsample 0.8, colsample_bytree 0.5",
        "rows": summarise_trials(trials, n_splits=n_splits, rho=rho, ropes=args.ropes),
    }
    if args.raw:
        Path(args.raw).write_text(json.dumps(trials))
    text = json.dumps(result, indent=2)
    out = (
        Path(args.out)
        if args.out
        else RESULTS / (f"calibration-{datetime.now(UTC):%Y-%m-%d}.json")
    )
    save_text(out, text + "\n")  # atomically
    print(text)
    return result


if __name__ == "__main__":
    main()
