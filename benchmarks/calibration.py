"""Is the verdict calibrated? ``python -m benchmarks.calibration [--data FILE]``.

On the real sample (``../shared/data/creditcard_sample.csv.gz``: 20,000 rows,
all 492 frauds; any table with ``--schema``), many trials of fraudaug's
protocol, each with its own splits and seeds, each comparing detectors whose
true difference is known:

- **A/A, seeded once per run**: two XGBoost detectors that differ only in their
  seed (the shared detector with ``subsample`` 0.8 and ``colsample_bytree`` 0.5),
  each seed fixed over a trial's splits, as one method's settings are (the same
  trees draw the same columns on every split): their difference has no mean over
  trials, and whatever of it persists between a trial's splits is the kind of
  difference two methods equal on average can still have on one table.
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

The seed-only A/A designs hold no difference that depends on the data, so they
test the procedures where the splits' differences share nothing but chance.
The correction is for the other case, which one table cannot show: two real
methods whose difference on this table is not their difference on another.
Hence the last design:

**Coverage of real methods** (``--datasets``): datasets drawn from the table
(half of its groups of rows each, stratified), fraudaug's random splits of
each, and the pipeline's own detector as ``none``, ``class_weight`` and
``smote`` (one new row per fraud). Each dataset's difference between two
methods strays from the population's (the mean over every dataset): how often
the plain and the corrected 95 % intervals miss the population difference
(nominal 5 %), and the correlation between a dataset's splits that the
spread of the datasets' means implies (the correction assumes rho).

The features are the pipeline's model space fitted once on the whole table:
every transform in it is monotone per column, so the trees (split on quantile
bins of the training rows) are those of a transformer fitted on each split's
training rows.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
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
COVERAGE_METHODS = ("none", "class_weight", "smote")
COVERAGE_PAIRS = {
    "class_weight_vs_none": ("class_weight", "none"),
    "smote_vs_none": ("smote", "none"),
}
"""Real methods whose difference varies from dataset to dataset."""

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


def _fit_score(
    X,
    y,
    split,
    seed,
    flip_share=0.0,
    flip_seed=0,
    feature_types=None,
    *,
    method="none",
    subsample=True,
):
    """A detector's test AUPRC on a split: the shared XGBoost (with row and
    column subsampling unless ``subsample`` is False: the pipeline's own
    detector), trained as ``method`` (``none``, ``class_weight`` or ``smote`` at
    one new row per real training fraud), with ``flip_share`` of its training
    frauds relabelled as legitimate."""
    from sklearn.metrics import average_precision_score

    from pipeline.core.config import DetectorConfig, EvaluationConfig
    from pipeline.detector.model import make_detector
    from pipeline.resampling.registry import make_sampler

    train = split["train"]
    X_train, y_train = X[train], y[train].copy()
    if flip_share:
        frauds = np.flatnonzero(y_train == 1)
        rng = np.random.default_rng(flip_seed)
        flipped = rng.choice(frauds, int(round(flip_share * len(frauds))), False)
        y_train[flipped] = 0
    n_fraud = int(y_train.sum())
    detector = make_detector(
        DetectorConfig(n_jobs=1),
        random_state=seed,
        scale_pos_weight=(len(y_train) - n_fraud) / n_fraud
        if method == "class_weight"
        else None,
        feature_types=feature_types,
    )
    if subsample:
        detector.set_params(subsample=0.8, colsample_bytree=0.5)
    if method == "smote":
        categorical = [i for i, t in enumerate(feature_types or []) if t == "c"]
        sampler = make_sampler(
            "smote",
            EvaluationConfig(),
            random_state=seed,
            n_minority=2 * n_fraud,
            # (the codes the rows hold: SMOTE-NC reads which columns they are)
            category_counts={i: int(X[:, i].max()) + 1 for i in categorical},
            n_features=X.shape[1],
        )
        X_train, y_train = sampler.fit_resample(X_train, y_train)
    validation = split["validation"]
    detector.fit(
        X_train,
        y_train,
        eval_set=[(X[validation], y[validation])],
        verbose=False,
    )
    scores = detector.predict_proba(X[split["test"]])[:, 1]
    return float(average_precision_score(y[split["test"]], scores))


def _dataset(y, groups, share, seed) -> np.ndarray:
    """A dataset drawn from the table: ``share`` of its groups of identical
    rows, stratified (a fraud group when any row is), their rows in order."""
    from sklearn.model_selection import train_test_split

    codes = np.unique(groups, return_inverse=True)[1]
    group_y = np.zeros(codes.max() + 1, dtype=np.int64)
    np.maximum.at(group_y, codes, y)
    kept, _ = train_test_split(
        np.arange(len(group_y)),
        train_size=share,
        stratify=group_y,
        random_state=seed % 2**32,
    )
    return np.flatnonzero(np.isin(codes, kept))


def _coverage_trial(args: tuple) -> dict:
    """One dataset drawn from the table, fraudaug's random splits of it, and the
    pipeline's own detector trained as each method of
    :data:`COVERAGE_METHODS` on each split: their test AUPRCs."""
    trial, seed, n_splits, share = args
    X, y, groups = _DATA["X"], _DATA["y"], _DATA["groups"]
    rng = np.random.default_rng(np.random.SeedSequence([seed, trial, 1]))
    rows = _dataset(y, groups, share, int(rng.integers(0, 2**31)))
    split_seeds = [int(s) for s in rng.integers(0, 2**31, n_splits)]
    method_seeds = rng.integers(0, 2**31, n_splits)
    splits = [
        {k: rows[v] for k, v in split.items()}
        for split in _random_splits(y[rows], groups[rows], split_seeds)
    ]
    return {
        method: [
            _fit_score(
                X,
                y,
                split,
                int(method_seeds[j]),
                feature_types=_DATA["feature_types"],
                method=method,
                subsample=False,
            )
            for j, split in enumerate(splits)
        ]
        for method in COVERAGE_METHODS
    }


def summarise_coverage(
    trials: list[dict], *, n_splits: list[int], rho: float
) -> list[dict]:
    """Per pair of :data:`COVERAGE_PAIRS` and number of splits: the population
    difference (the mean of every trial's mean over all its splits: datasets
    drawn from the same table), how often the plain and the corrected 95 %
    intervals miss it (nominal 5 %), their mean half-widths, and the
    correlation between a trial's splits that the trials' means imply (what the
    correction assumes it is: rho)."""
    from pipeline.evaluation.statistics import corrected_t_interval, t_interval

    rows = []
    most = max(n_splits)
    for pair, (method, baseline) in COVERAGE_PAIRS.items():
        diffs = [np.subtract(t[method], t[baseline]) for t in trials if method in t]
        truth = float(np.mean([d[:most].mean() for d in diffs]))
        for j in n_splits:
            means = np.array([d[:j].mean() for d in diffs])
            within = float(np.mean([d[:j].var(ddof=1) for d in diffs]))
            implied = (
                (means.var(ddof=1) - within / j) / (within * (1 - 1 / j))
                if len(means) > 1 and within > 0
                else None
            )
            missed_plain, missed_corrected, width_plain, width_corrected = (
                [],
                [],
                [],
                [],
            )
            for d in diffs:
                _, plain = t_interval(d[:j])
                _, corrected = corrected_t_interval(d[:j], rho)
                missed_plain.append(not plain[0] <= truth <= plain[1])
                missed_corrected.append(not corrected[0] <= truth <= corrected[1])
                width_plain.append((plain[1] - plain[0]) / 2)
                width_corrected.append((corrected[1] - corrected[0]) / 2)
            rows.append(
                {
                    "pair": pair,
                    "n_splits": j,
                    "datasets": len(diffs),
                    "population_difference": round(truth, 5),
                    "sd_of_differences": round(float(np.sqrt(within)), 5),
                    "sd_of_dataset_means": _spread(means),
                    "implied_correlation": None
                    if implied is None
                    else round(float(implied), 3),
                    "half_width_plain": round(float(np.mean(width_plain)), 5),
                    "half_width_corrected": round(float(np.mean(width_corrected)), 5),
                    "missed_plain": _rate(missed_plain),
                    "missed_corrected": _rate(missed_corrected),
                }
            )
    return rows


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
                        "sd_of_trial_means": _spread(means),
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


RUN_DESIGN_SPLITS = {"random": (3, 10), "rolling": (3,)}
"""The designs' numbers of splits: the default profile's 3 and the full one's
10 random splits (a 10-split run's first 3 are exactly the default's), and the
default's 3 folds."""


def summarise_run_design(correlation: dict, rope: float) -> list[dict]:
    """Calibration in the run's own design, from the correlation benchmark's
    runs (``correlation``: its result; each cell's independent data sets run by
    ``fraudaug run`` with the same seeds for both methods of a split, the
    pipeline's detector, real methods against ``none``).

    A pair's true difference is the mean over every data set of the cell (its
    standard error from the spread of the data sets' means); it lies
    ``inside`` the ROPE, ``beyond`` it, or ``near`` it (within two standard
    errors of its edge: no claim is counted right or wrong there). Each data
    set's verdict at the design's numbers of splits (:data:`RUN_DESIGN_SPLITS`)
    and under each setting of rho (the measured one,
    :data:`pipeline.evaluation.correlation.MEASURED`, and Nadeau & Bengio's):
    how often it says better, equivalent, worse or undecided, and its false
    claims — better or worse where the truth is inside the ROPE, equivalent or
    the wrong direction where it is beyond."""
    from pipeline.evaluation.correlation import MEASURED
    from pipeline.evaluation.statistics import decide, posterior, rope_probabilities

    rows = []
    for cell in correlation["cells"]:
        mode = "stratified" if cell["design"] == "random" else "rolling"
        rhos = {"nadeau_bengio": cell["heuristic_rho"]}
        if mode in MEASURED:
            rhos["measured"] = MEASURED[mode].upper95
        for pair in cell["pairs"]:
            method = pair.split("_vs_")[0]
            values = [d["diffs"][method] for d in cell["per_dataset"]]
            means = np.mean(values, axis=1)
            truth, se = (
                float(means.mean()),
                float(means.std(ddof=1) / np.sqrt(len(means))),
            )
            if abs(truth) + 2 * se < rope:
                zone = "inside"
            elif abs(truth) - 2 * se > rope:
                zone = "beyond"
            else:
                zone = "near"
            for j in RUN_DESIGN_SPLITS[cell["design"]]:
                if j > len(values[0]):
                    continue
                for setting, rho in rhos.items():
                    outcomes = [
                        decide(rope_probabilities(*posterior(v[:j], rho), rope))
                        for v in values
                    ]
                    if zone == "inside":
                        false = [o in ("better", "worse") for o in outcomes]
                    elif zone == "beyond":
                        right = "better" if truth > 0 else "worse"
                        false = [o not in (right, "undecided") for o in outcomes]
                    else:
                        false = []
                    rows.append(
                        {
                            "kind": cell["kind"],
                            "design": cell["design"],
                            "pair": pair,
                            "n_splits": j,
                            "rho_setting": setting,
                            "rho": round(float(rho), 4),
                            "true_difference": round(truth, 4),
                            "true_difference_se": round(se, 4),
                            "zone": zone,
                            "datasets": len(outcomes),
                            **{
                                k: outcomes.count(k)
                                for k in ("better", "equivalent", "worse", "undecided")
                            },
                            "false_claims": _rate(false) if false else None,
                        }
                    )
    return rows


def calibrate_runs(path: str | Path, rope: float, out: str | None) -> dict:
    """``--runs``: :func:`summarise_run_design` of a correlation result file,
    written to ``calibration-runs-<date>.json``."""
    from benchmarks import write_result

    correlation = json.loads(Path(path).read_text())
    result = {
        "benchmark": "calibration-runs",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "from": os.path.basename(str(path)),
        "rope": rope,
        "rows": summarise_run_design(correlation, rope),
    }
    write_result(result, "calibration-runs", out)
    return result


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
        "--datasets",
        type=int,
        default=200,
        help="datasets drawn from the table for the coverage of real methods",
    )
    parser.add_argument(
        "--dataset-share",
        type=float,
        default=0.5,
        help="each drawn dataset's share of the table's groups of rows",
    )
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
    parser.add_argument(
        "--runs",
        default=None,
        help="a correlation benchmark's result (benchmarks/results/correlation-"
        "*.json): calibrate the verdict in the run's own design on its independent "
        "runs instead, at --rope",
    )
    parser.add_argument(
        "--rope", type=float, default=None, help="--runs: default evaluation.rope's"
    )
    args = parser.parse_args(argv)
    if args.runs:
        from pipeline.core.config import RopeConfig

        rope = args.rope if args.rope is not None else RopeConfig().auprc
        return calibrate_runs(args.runs, rope, args.out)

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
    drawn = [
        (t, args.seed, args.splits, args.dataset_share) for t in range(args.datasets)
    ]
    # Spawned, never forked: a fork of a process that has loaded TensorFlow or
    # XGBoost's thread pools (a test session, a notebook) can deadlock.
    with ProcessPoolExecutor(
        args.jobs,
        initializer=_load,
        initargs=(args.data, args.schema),
        mp_context=multiprocessing.get_context("spawn"),
    ) as pool:
        trials = _collect(pool.map(_trial, jobs), len(jobs), "trials", started)
        datasets = _collect(
            pool.map(_coverage_trial, drawn), len(drawn), "datasets", started
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
        "datasets": args.datasets,
        "dataset_share": args.dataset_share,
        "splits": args.splits,
        "flip": args.flip,
        "ropes": args.ropes,
        "rho": rho,
        "seed": args.seed,
        "seconds": round(seconds, 1),
        "detector": "A/A and the known difference: the shared XGBoost with subsample "
        "0.8 and colsample_bytree 0.5; coverage: the shared XGBoost as it is",
        "rows": summarise_trials(trials, n_splits=n_splits, rho=rho, ropes=args.ropes)
        if trials
        else [],
        "coverage": summarise_coverage(datasets, n_splits=n_splits, rho=rho)
        if datasets
        else [],
    }
    if args.raw:
        Path(args.raw).write_text(json.dumps({"trials": trials, "datasets": datasets}))
    result = _json_safe(result)
    text = json.dumps(result, indent=2, allow_nan=False)
    out = (
        Path(args.out)
        if args.out
        else RESULTS / (f"calibration-{datetime.now(UTC):%Y-%m-%d}.json")
    )
    save_text(out, text + "\n")  # atomically
    print(text)
    return result


def _spread(values) -> float | None:
    """The standard deviation of ``values``, ``None`` below two."""
    return round(float(np.std(values, ddof=1)), 5) if len(values) > 1 else None


def _json_safe(value):
    """The result with every figure that could not be computed (too few trials
    for a spread, a correlation of constant differences) as null: JSON has no
    NaN."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _collect(results, total: int, what: str, started: float) -> list:
    """The pool's results in order, a progress line on stderr every 10."""
    out = []
    for result in results:
        out.append(result)
        if len(out) % 10 == 0 or len(out) == total:
            elapsed = time.perf_counter() - started
            print(
                f"calibration: {len(out)}/{total} {what}, {elapsed:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    return out


if __name__ == "__main__":
    main()
