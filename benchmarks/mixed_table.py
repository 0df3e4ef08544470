"""Benchmark on a fraud team's kind of table (issue 21): fraudaug's GAN against
imbalanced-learn's SMOTENC and CTGAN, judged out of time.

    python -m benchmarks.mixed_table [--rows 350000] [--days 90] [--folds 3]
        [--seed 0 --seed 1] [--steps 1600] [--ctgan-python PATH] [--ctgan-epochs 300]

The table is ``fraudaug demo-data --kind transactions`` (the Fraud Detection
Handbook's simulation: ids, a timestamp, 4 channels, 8 merchant categories, 0/1
flags, window counts and means, a text label). ``fraudaug schema`` detects its
schema (timed). Folds as the issue measured them: 21 training days, a 7-day delay,
7 test days, each fold shifted back by the test window (the newest ends at the
newest row). The training window's last 3 days are the validation rows (the GAN's
model selection, the detectors' early stopping); every generator is fitted on the
rest of the training window's rows only.

Per fold and GAN seed, for each source of fraud rows (the GAN with the default
config; SMOTENC's new rows; CTGAN's rows, fitted in table units with the
categorical columns discrete, when ``--ctgan-python`` names a Python that has
``ctgan``; the real training frauds, the floor): the C2ST against the test
window's real frauds (fraudaug's: 5-fold ROC-AUC of an XGBoost, equal numbers of
rows), the share of rows whose every integer column is whole and the share whose
every categorical column holds a training category. Then detectors (fraudaug's
XGBoost settings) on the same folds: ``none`` with XGBoost's categorical splits
one-hot, by partition, and with the codes as plain numbers (the choice of
``detector.categorical``), and ``none`` + 1x the training frauds of SMOTENC, GAN
and CTGAN rows; test AUPRC.

Prints one JSON object and writes it to ``benchmarks/results/mixed-<date>.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import write_result

PEER = Path(__file__).resolve().parent / "ctgan_peer.py"


def folds(times: pd.Series, n_folds: int, train_days=21, delay_days=7, test_days=7):
    """``[(train_start, validation_start, train_end, test_start, test_end)]``,
    newest fold first; the validation rows are the training window's last 3 days."""
    end = times.max().normalize() + pd.Timedelta(days=1)
    out = []
    for k in range(n_folds):
        test_end = end - pd.Timedelta(days=k * test_days)
        test_start = test_end - pd.Timedelta(days=test_days)
        train_end = test_start - pd.Timedelta(days=delay_days)
        train_start = train_end - pd.Timedelta(days=train_days)
        if train_start < times.min().normalize():
            raise SystemExit(f"fold {k}: the table is too short for the windows")
        out.append(
            (
                train_start,
                train_end - pd.Timedelta(days=3),
                train_end,
                test_start,
                test_end,
            )
        )
    return out


def _wholeness(rows: np.ndarray, transformer) -> dict[str, float]:
    """Share of rows whose integer columns are all whole (in table units, before
    any rounding) and whose categorical columns all hold a training category."""
    whole = np.ones(len(rows), dtype=bool)
    for j in transformer.integer_features:
        f = transformer.features_[j]
        values = rows[:, j] * f["scale"] + f["mean"]
        if f["log"]:
            values = np.expm1(values)
        whole &= np.abs(values - np.round(values)) < 1e-6
    valid = np.ones(len(rows), dtype=bool)
    for j in transformer.categorical_features:
        k = len(transformer.features_[j]["categories"])
        valid &= (
            (rows[:, j] == np.round(rows[:, j])) & (rows[:, j] >= 0) & (rows[:, j] < k)
        )
    return {
        "whole_integers_share": float(whole.mean()),
        "valid_categories_share": float(valid.mean()),
    }


def _ctgan_rows(python, transformer, train_frauds, n, seed, epochs, tmp: Path):
    """CTGAN fitted on the training frauds in table units (categorical columns
    discrete), ``n`` rows back in model space (fractions and all)."""
    table = transformer.inverse_transform(train_frauds)
    # inverse_transform rounds integers: CTGAN sees them as the numbers they are.
    for j in transformer.integer_features:
        name = transformer.feature_names[j]
        table[name] = table[name].astype(np.float64)
    names = transformer.feature_names
    discrete = [names[j] for j in transformer.categorical_features]
    for name in discrete:
        table[name] = table[name].astype(str)
    source, out, args = tmp / "train.parquet", tmp / "ctgan.parquet", tmp / "a.json"
    table.to_parquet(source, index=False)
    args.write_text(
        json.dumps({"discrete": discrete, "epochs": epochs, "n": n, "seed": seed})
    )
    proc = subprocess.run(
        [python, str(PEER), str(source), str(out), str(args)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"CTGAN failed: {proc.stderr[-2000:]}")
    sampled = pd.read_parquet(out)
    for j in transformer.categorical_features:
        name = names[j]
        categories = transformer.features_[j]["categories"]
        lookup = {str(c): c for c in categories}
        sampled[name] = sampled[name].map(lambda v, lookup=lookup: lookup.get(v, v))
    # A negative amount (log1p needs > -1) is clipped at 0, as a user would.
    for f in transformer.features_:
        if f.get("log"):
            sampled[f["name"]] = sampled[f["name"]].clip(lower=0.0)
    rows = transformer.transform(sampled)
    return rows, json.loads(proc.stdout.strip().splitlines()[-1])


def _detector_auprc(config, X, y, Xv, yv, Xt, yt, seed, feature_types, categorical):
    from sklearn.metrics import average_precision_score

    from pipeline.detector.model import make_detector

    detector_config = config.detector.model_copy(update={"categorical": categorical})
    model = make_detector(
        detector_config, random_state=seed, feature_types=feature_types
    )
    model.fit(X, y, eval_set=[(Xv, yv)], verbose=False)
    return float(average_precision_score(yt, model.predict_proba(Xt)[:, 1]))


def _paired(a: list[float], b: list[float]) -> dict:
    from pipeline.evaluation.statistics import t_interval

    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    _, ci = t_interval(d)
    return {"mean": float(d.mean()), "ci95": ci}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=350_000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--seed", type=int, action="append", default=[])
    parser.add_argument("--steps", type=int, default=1600)
    parser.add_argument("--ctgan-python", help="a Python with ctgan installed")
    parser.add_argument("--ctgan-epochs", type=int, default=300)
    parser.add_argument("--out", help="default: benchmarks/results/mixed-<date>.json")
    args = parser.parse_args(argv)
    seeds = args.seed or [0, 1]

    from pipeline.core.backend import load_tensorflow

    load_tensorflow()
    from pipeline.core.config import GANConfig
    from pipeline.data.datasets import write_demo_data
    from pipeline.data.ingest import read_transactions
    from pipeline.data.schema import load_schema
    from pipeline.evaluation.fidelity import c2st_auc
    from pipeline.features.transformer import TabularTransformer
    from pipeline.gan.encoding import GANColumns
    from pipeline.gan.trainer import train_cwgan_gp
    from pipeline.resampling.registry import make_sampler
    from pipeline.run.plan import load_config

    config = load_config("default")
    result: dict = {
        "benchmark": "mixed_table",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "rows_asked": args.rows,
        "days": args.days,
        "seeds": seeds,
        "gan_steps": args.steps,
    }
    with tempfile.TemporaryDirectory(prefix="fraudaug-mixed-") as tmp:
        tmp = Path(tmp)
        data = tmp / "transactions.parquet"
        write_demo_data(data, args.rows, kind="transactions", days=args.days)
        start = time.perf_counter()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pipeline",
                "schema",
                str(data),
                "--label",
                "is_fraud",
                "--time",
                "tx_datetime",
                "--amount",
                "amount",
                "--out",
                str(tmp / "schema.json"),
            ],  # fmt: skip
            capture_output=True,
            text=True,
        )
        result["schema_command_s"] = round(time.perf_counter() - start, 2)
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
        schema = load_schema(tmp / "schema.json")
        frame, summary = read_transactions(data, schema)
        result["table"] = {
            "rows": summary.rows,
            "frauds": summary.frauds,
            "columns": len(schema.names),
        }
        times = frame[schema.time]
        label = schema.label.column
        records = []
        for k, (start_, val_start, train_end, test_start, test_end) in enumerate(
            folds(times, args.folds)
        ):
            fit_rows = frame[(times >= start_) & (times < val_start)]
            val_rows = frame[(times >= val_start) & (times < train_end)]
            test_rows = frame[(times >= test_start) & (times < test_end)]
            transformer = TabularTransformer(schema).fit(fit_rows)
            X, y = transformer.transform(fit_rows), fit_rows[label].to_numpy(np.int64)
            Xv, yv = transformer.transform(val_rows), val_rows[label].to_numpy(np.int64)
            Xt, yt = (
                transformer.transform(test_rows),
                test_rows[label].to_numpy(np.int64),
            )
            train_frauds, test_frauds = X[y == 1], Xt[yt == 1]
            n = len(train_frauds)
            fold = {
                "fold": k,
                "train": [str(start_.date()), str(train_end.date())],
                "test": [str(test_start.date()), str(test_end.date())],
                "train_frauds": n,
                "test_frauds": int(len(test_frauds)),
            }
            types = transformer.feature_types
            fold["none_auprc"] = {
                how: _detector_auprc(
                    config, X, y, Xv, yv, Xt, yt, 0,
                    None if how == "codes_as_numbers" else types,
                    "onehot" if how == "codes_as_numbers" else how,
                )
                for how in ("onehot", "partition", "codes_as_numbers")
            }  # fmt: skip
            smote = make_sampler(
                "smote",
                config.evaluation,
                random_state=0,
                n_minority=2 * n,
                category_counts=transformer.category_counts,
                n_features=X.shape[1],
            )
            X_res, _ = smote.fit_resample(X, y)
            smote_rows = X_res[len(X) :]
            for seed in seeds:
                gan_config = GANConfig(
                    **{**config.gan.model_dump(), "steps": args.steps}
                )
                t0 = time.perf_counter()
                trained = train_cwgan_gp(
                    X,
                    y,
                    gan_config,
                    random_state=seed,
                    validation=Xv[yv == 1],
                    columns=GANColumns.of(transformer, gan_config),
                )
                gan_seconds = time.perf_counter() - t0
                sources = {
                    "cwgan_gp": trained.sample(n, random_state=seed),
                    "smotenc": smote_rows,
                    "real_train": train_frauds,
                }
                extra = {"cwgan_gp": {"train_seconds": round(gan_seconds, 1)}}
                if args.ctgan_python:
                    rows, info = _ctgan_rows(
                        args.ctgan_python,
                        transformer,
                        train_frauds,
                        n,
                        seed,
                        args.ctgan_epochs,
                        tmp,
                    )
                    sources["ctgan"] = rows
                    extra["ctgan"] = info
                record = {**fold, "seed": seed, "sources": {}}
                for name, rows in sources.items():
                    record["sources"][name] = {
                        "c2st_auc": c2st_auc(rows, test_frauds, random_state=seed),
                        **_wholeness(rows, transformer),
                        **extra.get(name, {}),
                    }
                record["augmented_auprc"] = {
                    name: _detector_auprc(
                        config,
                        np.vstack([X, rows[:n]]),
                        np.r_[y, np.ones(min(n, len(rows)), dtype=np.int64)],
                        Xv, yv, Xt, yt, seed, types, config.detector.categorical,
                    )
                    for name, rows in sources.items()
                    if name != "real_train"
                }  # fmt: skip
                print(json.dumps(record), file=sys.stderr)
                records.append(record)
    result["runs"] = records
    names = list(records[0]["sources"])
    result["c2st_mean"] = {
        name: float(np.mean([r["sources"][name]["c2st_auc"] for r in records]))
        for name in names
    }
    gan = [r["sources"]["cwgan_gp"]["c2st_auc"] for r in records]
    result["c2st_gan_minus"] = {
        name: _paired(gan, [r["sources"][name]["c2st_auc"] for r in records])
        for name in names
        if name != "cwgan_gp"
    }
    by_fold = {r["fold"]: r for r in records}
    result["none_auprc_by_categorical"] = {
        how: [by_fold[k]["none_auprc"][how] for k in sorted(by_fold)]
        for how in ("onehot", "partition", "codes_as_numbers")
    }
    result["augmented_auprc_mean"] = {
        name: float(np.mean([r["augmented_auprc"][name] for r in records]))
        for name in records[0]["augmented_auprc"]
    }
    write_result(result, "mixed", args.out)
    return result


if __name__ == "__main__":
    main()
