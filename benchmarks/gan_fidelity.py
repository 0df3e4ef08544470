"""GAN fidelity benchmark on the real data: candidates beside the default, over
several splits and seeds, so that a gain can be told from noise.

Every candidate is a set of config overrides. Each one is trained on the training
rows of splits 0..S-1 of the ``default`` profile (the rows ``fraudaug run`` uses,
duplicates grouped) with GAN seeds from ``--seed`` values (seed 0 is the run's
own), and its generated frauds (filtered, as a run draws them) are judged against
the split's *validation* frauds (C2ST: what a choice between candidates may use)
and its *test* frauds (C2ST, KS, correlation, near copies). SMOTE's rows and the
real training frauds are measured on the same splits for scale. ``default`` (the
current config) is always run, and every candidate is compared with it run by run
(paired: same split, same seed). Candidates that differ only in the filter share
one trained GAN per split and seed.

    python -m benchmarks.gan_fidelity [--data data/raw/creditcard.csv]
        [--splits 3] [--seed 0 --seed 1] [--jobs 2]
        [--candidate NAME:gan.KEY=JSON[,gan.KEY=JSON...]]...
        [--set gan.steps=1600] [--tag NAME]

Results are cached per (data, splits, config, seed, code) under the stage cache,
so adding candidates reruns nothing already measured. Prints a table and writes one
JSON object to ``benchmarks/results/gan-fidelity-<date>[-TAG].json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
METRICS = ("validation_c2st", "test_c2st", "ks_mean", "corr_diff", "near_copy_share")
"""``validation_c2st``: the drawn rows against the split's validation frauds (what
a choice between candidates may use); ``test_c2st``: against its test frauds."""

_WORKER: dict[str, Any] = {}


def parse_candidate(text: str) -> tuple[str, list[str]]:
    """``"lr2e-4:gan.learning_rate=2e-4,gan.ema_decay=0.99"`` -> name, overrides."""
    name, sep, body = text.partition(":")
    if not sep or not name:
        raise SystemExit(f"--candidate {text!r}: expected NAME:SECTION.KEY=JSON,...")
    items, depth, current = [], 0, ""
    for char in body:  # commas inside [...] belong to a list value
        depth += char == "["
        depth -= char == "]"
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    if current:
        items.append(current)
    return name, items


def _prepare(data_path: str, cache_dir: Path, n_splits: int) -> dict[str, Any]:
    from pipeline.core.config import run_seeds
    from pipeline.run.plan import load_config
    from pipeline.run.prepare import stage_ingest, stage_preprocess

    config = load_config("default", overrides={"split": {"n_splits": n_splits}})
    ingested = stage_ingest(data_path, cache_dir)
    prepared = stage_preprocess(
        ingested["frame_path"],
        cache_dir / "bench" / f"splits-{n_splits}",
        config,
        run_seeds(0, n_splits)["split"],
        cache_dir,
    )
    return {"ingested": ingested, "prepared": prepared}


def _init_worker(threads: int) -> None:
    from pipeline.core.backend import load_tensorflow

    tf = load_tensorflow()

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    tf.config.experimental.enable_op_determinism()
    import logging

    logging.getLogger("pipeline").setLevel(logging.WARNING)


def _split_data(paths: dict[str, Any], split: int) -> dict:
    from pipeline.features.rows import SplitInputs

    key = (paths["prepared"]["splits_path"], split)
    if _WORKER.get("key") != key:
        _WORKER["key"] = key
        _WORKER["data"] = SplitInputs(
            paths["ingested"]["frame_path"],
            paths["prepared"]["splits_path"],
            paths["prepared"]["transformer_paths"][split],
            split,
        ).load()
    return _WORKER["data"]


def _n_synthetic(data: dict) -> int:
    """As many rows as SMOTE adds at the shared ratio (what the run's fidelity
    check generates)."""
    from pipeline.core.config import EvaluationConfig

    y = data["train"]["y"]
    target = int(EvaluationConfig().sampling_strategy * (y == 0).sum())
    return max(target - int((y == 1).sum()), 1)


SAMPLING_FIELDS = ("filter", "filter_share")
"""Settings that act only when rows are drawn: candidates that differ only in them
share one trained GAN per split and seed (its variants)."""


def run_gan(job: dict[str, Any]) -> dict[str, Any]:
    """Train one GAN on one split with one seed; judge the rows of each of its
    variants (the candidates that differ from it only in SAMPLING_FIELDS)."""
    import dataclasses

    from pipeline.core.config import GANConfig
    from pipeline.evaluation.fidelity import c2st_auc, compute_fidelity
    from pipeline.gan.selection import fit_filter_classifier, selection_seed
    from pipeline.gan.trainer import train_cwgan_gp

    data = _split_data(job["paths"], job["split"])
    X, y = data["train"]["X"], data["train"]["y"]
    val = data["validation"]["X"][data["validation"]["y"] == 1]
    test = data["test"]["X"][data["test"]["y"] == 1]
    config = GANConfig.model_validate(job["gan"])
    wants_critic = any(v["filter"] == "critic" for v in job["variants"].values())
    if wants_critic:  # training is the same; the critic is kept for the filter
        config = config.model_copy(update={"filter": "critic"})
    start = time.perf_counter()
    trained = train_cwgan_gp(X, y, config, random_state=job["gan_seed"], validation=val)
    seconds = time.perf_counter() - start
    plain = dataclasses.replace(
        trained, meta={**trained.meta, "filter": "none"}, filter_model=None
    )
    filters = {"none": None, "critic": trained.filter_model if wants_critic else None}
    if any(v["filter"] == "classifier" for v in job["variants"].values()):
        # One classifier, as train_cwgan_gp fits it, for every share.
        filters["classifier"] = fit_filter_classifier(
            plain, X[y == 1], 1, selection_seed(job["gan_seed"])
        )
    common = {
        "train_seconds": round(seconds, 1),
        "nonfinite_steps": trained.meta["nonfinite_steps"],
        "selected_step": trained.meta["selected_step"],
        "selected_weights": trained.meta["selected_weights"],
        # Model selection's best score (of the unfiltered generator: optimistic,
        # the minimum of noisy checks).
        "selection_c2st": min(
            v for s in trained.meta["selection"] for k, v in s.items() if k != "step"
        ),
    }
    out = {}
    for name, variant in job["variants"].items():
        gan = dataclasses.replace(
            plain,
            meta={**plain.meta, **variant},
            filter_model=filters[variant["filter"]],
        )
        rows = gan.sample(_n_synthetic(data), random_state=job["gan_seed"] + 7)
        fidelity = compute_fidelity(
            rows, test, X[y == 1], random_state=job["split"] + 1
        )
        out[name] = {
            **common,
            "validation_c2st": c2st_auc(rows, val, random_state=job["split"] + 1),
            "test_c2st": fidelity["c2st_auc"],
            **{k: v for k, v in fidelity.items() if k != "c2st_auc"},
        }
    return out


def run_references(job: dict[str, Any]) -> dict[str, Any]:
    """SMOTE's rows and the real training frauds, judged the same way."""
    from pipeline.core.config import EvaluationConfig
    from pipeline.evaluation.fidelity import c2st_auc, compute_fidelity
    from pipeline.resampling.registry import make_sampler

    data = _split_data(job["paths"], job["split"])
    X, y = data["train"]["X"], data["train"]["y"]
    val = data["validation"]["X"][data["validation"]["y"] == 1]
    test = data["test"]["X"][data["test"]["y"] == 1]
    smote = make_sampler("smote", EvaluationConfig(), random_state=job["split"])
    X_res, _ = smote.fit_resample(X, y)
    out = {}
    for name, rows in (("smote", X_res[len(y) :]), ("real_train", X[y == 1])):
        fidelity = compute_fidelity(
            rows, test, X[y == 1], random_state=job["split"] + 1
        )
        out[name] = {
            "validation_c2st": c2st_auc(rows, val, random_state=job["split"] + 1),
            "test_c2st": fidelity.pop("c2st_auc"),
            **fidelity,
        }
    # The training frauds' distance to themselves is 0: no copying measure.
    for key in ("dcr_median", "near_copy_share"):
        out["real_train"].pop(key, None)
    return out


def _job_key(job: dict[str, Any], code: str) -> str:
    payload = {k: v for k, v in job.items() if k not in ("paths", "name")}
    payload["data"] = job["paths"]["ingested"]["sha256"]
    payload["splits"] = Path(job["paths"]["prepared"]["splits_path"]).parent.name
    payload["code"] = code
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _stats(values: list[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=float)
    return {
        "mean": float(a.mean()),
        "sd": float(a.std(ddof=1)) if len(a) > 1 else 0.0,
        "min": float(a.min()),
        "max": float(a.max()),
    }


def paired(candidate: list[dict], default: list[dict], metric: str) -> dict:
    """Candidate minus default over the same (split, seed) runs: mean and 95 %
    t-interval (a gain when the interval excludes 0)."""
    from pipeline.evaluation.statistics import t_interval

    by_run = {(r["split"], r["seed"]): r[metric] for r in default}
    diffs = np.array(
        [r[metric] - by_run[(r["split"], r["seed"])] for r in candidate], dtype=float
    )
    _, ci = t_interval(diffs)
    return {"mean": float(diffs.mean()), "ci95": ci, "n": len(diffs)}


def summarise(runs: dict[str, list[dict]]) -> dict[str, dict]:
    out = {}
    for name, records in runs.items():
        entry = {
            m: _stats([r[m] for r in records])
            for m in (*METRICS, "train_seconds")
            if all(m in r for r in records)
        }
        entry["nonfinite_steps"] = int(
            sum(r.get("nonfinite_steps", 0) for r in records)
        )
        if name != "default" and "default" in runs:
            entry["vs_default"] = {
                m: paired(records, runs["default"], m)
                for m in ("test_c2st", "validation_c2st", "near_copy_share")
            }
        out[name] = entry
    return out


def markdown_table(summary: dict[str, dict], references: dict[str, dict]) -> str:
    lines = [
        "| candidate | validation C2ST mean ± sd | Δ vs default, validation [95 % CI] "
        "| test C2ST mean ± sd | Δ vs default, test [95 % CI] | KS | corr. diff "
        "| near copies | train s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in {**references, **summary}.items():

        def delta(metric: str, s=s) -> str:
            d = s.get("vs_default", {}).get(metric)
            if not d or not d["ci95"]:
                return "–"
            low, high = d["ci95"]
            mark = " **gain**" if high < 0 else (" worse" if low > 0 else "")
            return f"{d['mean']:+.3f} [{low:+.3f}, {high:+.3f}]{mark}"

        def cell(metric: str, fmt: str = ".3f", s=s) -> str:
            return f"{s[metric]['mean']:{fmt}}" if metric in s else "–"

        def spread(metric: str, s=s) -> str:
            if metric not in s:
                return "–"
            return f"{s[metric]['mean']:.3f} ± {s[metric]['sd']:.3f}"

        lines.append(
            f"| {name} | {spread('validation_c2st')} | {delta('validation_c2st')} "
            f"| {spread('test_c2st')} | {delta('test_c2st')} | {cell('ks_mean')} "
            f"| {cell('corr_diff')} | {cell('near_copy_share', '.1%')} "
            f"| {cell('train_seconds', '.0f')} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="data/raw/creditcard.csv")
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--seed", type=int, action="append", dest="seeds")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--candidate", action="append", default=[])
    parser.add_argument(
        "--set", action="append", default=[], metavar="SECTION.KEY=JSON"
    )
    parser.add_argument("--tag", default="")
    parser.add_argument("--cache-dir", default="data/interim")
    args = parser.parse_args(argv)
    seeds = args.seeds or [0, 1]
    # Idle OpenMP threads (XGBoost, scikit-learn) spin by default: with two worker
    # processes on two cores each one's spinning starves the other's work
    # (measured: 207 s instead of 16 s for the same jobs). Set before the OpenMP
    # runtime is loaded here, so the workers inherit it.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

    from pipeline.core.code import code_version
    from pipeline.core.config import GANConfig, parse_overrides, run_seeds
    from pipeline.run.cache import FEATURES_CODE
    from pipeline.run.plan import load_config

    base = load_config("default", overrides=parse_overrides(args.set))
    candidates = {"default": base.gan}
    for text in args.candidate:
        name, items = parse_candidate(text)
        overrides = parse_overrides(args.set + items)
        candidates[name] = load_config("default", overrides=overrides).gan
    paths = _prepare(args.data, Path(args.cache_dir), args.splits)
    code = code_version(
        "pipeline.gan", "pipeline.evaluation.fidelity", *FEATURES_CODE, "benchmarks"
    )
    cache = Path(args.cache_dir) / "bench" / "gan_fidelity"
    cache.mkdir(parents=True, exist_ok=True)

    jobs = [
        {
            "kind": "references",
            "name": "references",
            "split": split,
            "paths": paths,
        }
        for split in range(args.splits)
    ]
    # Candidates that differ only in how rows are drawn share their training.
    trainings: dict[str, dict[str, Any]] = {}
    unfiltered = GANConfig().model_dump(mode="json")
    for name, gan in candidates.items():
        dump = gan.model_dump(mode="json")
        training = {**dump, **{k: unfiltered[k] for k in SAMPLING_FIELDS}}
        key = json.dumps(training, sort_keys=True)
        trainings.setdefault(key, {"gan": training, "variants": {}})["variants"][
            name
        ] = {k: dump[k] for k in SAMPLING_FIELDS}
    for training in trainings.values():
        for seed in seeds:
            gan_seeds = run_seeds(seed, args.splits)["gan"]
            for split in range(args.splits):
                jobs.append(
                    {
                        "kind": "gan",
                        "name": "+".join(training["variants"]),
                        "split": split,
                        "seed": seed,
                        "gan_seed": gan_seeds[split],
                        "gan": training["gan"],
                        "variants": training["variants"],
                        "paths": paths,
                    }
                )
    results: list[tuple[dict, dict]] = []
    todo = []
    for job in jobs:
        entry = cache / f"{_job_key(job, code)}.json"
        if entry.is_file():
            results.append((job, json.loads(entry.read_text())))
        else:
            todo.append((job, entry))
    print(
        f"gan_fidelity: {len(jobs)} jobs, {len(jobs) - len(todo)} cached, "
        f"{len(todo)} to run on {args.jobs} worker(s)",
        file=sys.stderr,
    )
    started = time.perf_counter()
    threads = max(1, (os.cpu_count() or 2) // max(args.jobs, 1))
    # Fresh worker processes: a fork of a process whose TensorFlow is already
    # initialised cannot set its thread pools (nor safely use them).
    with ProcessPoolExecutor(
        args.jobs,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_init_worker,
        initargs=(threads,),
    ) as pool:
        # Order by split so that a worker reuses its loaded split data.
        todo.sort(key=lambda item: (item[0]["split"], item[0]["kind"] != "references"))
        futures = [
            (
                job,
                entry,
                pool.submit(
                    run_references if job["kind"] == "references" else run_gan, job
                ),
            )
            for job, entry in todo
        ]
        for done, (job, entry, future) in enumerate(futures, 1):
            result = future.result()
            tmp = entry.with_suffix(".tmp")
            tmp.write_text(json.dumps(result))
            os.replace(tmp, entry)
            results.append((job, result))
            scores = (
                ", ".join(f"{n} {r['test_c2st']:.3f}" for n, r in result.items())
                if job["kind"] == "gan"
                else ""
            )
            print(
                f"  [{done}/{len(futures)}] {job['name']} split {job['split']}"
                + (f" seed {job['seed']}" if "seed" in job else "")
                + (f": test C2ST {scores}" if scores else "")
                + f" ({time.perf_counter() - started:.0f} s)",
                file=sys.stderr,
            )

    runs: dict[str, list[dict]] = {name: [] for name in candidates}
    references: dict[str, list[dict]] = {"real_train": [], "smote": []}
    for job, result in results:
        if job["kind"] == "references":
            for name in references:
                references[name].append({"split": job["split"], **result[name]})
        else:
            for name, record in result.items():
                where = {"split": job["split"], "seed": job["seed"]}
                runs[name].append({**where, **record})
    for records in (*runs.values(), *references.values()):
        records.sort(key=lambda r: (r["split"], r.get("seed", 0)))
    summary = summarise(runs)
    reference_summary = {
        f"({name})": {m: _stats([r[m] for r in rows]) for m in METRICS if m in rows[0]}
        for name, rows in references.items()
    }
    from pipeline.core.backend import describe_device

    out = {
        "benchmark": "gan_fidelity",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "data": {
            "path": args.data,
            "sha256": paths["ingested"]["sha256"],
            "rows": paths["ingested"]["rows"],
        },
        "device": describe_device(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "splits": args.splits,
        "seeds": seeds,
        "jobs": args.jobs,
        "threads_per_job": threads,
        "candidates": {
            name: {
                "overrides": dict(parse_candidate(t) for t in args.candidate).get(
                    name, []
                ),
                "config": gan.model_dump(mode="json"),
            }
            for name, gan in candidates.items()
        },
        "summary": summary,
        "references": reference_summary,
        "runs": runs,
        "reference_runs": references,
        "table": markdown_table(summary, reference_summary),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = f"-{args.tag}" if args.tag else ""
    path = RESULTS / f"gan-fidelity-{datetime.now(UTC):%Y-%m-%d}{suffix}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(out, indent=2, default=float))
    os.replace(tmp, path)
    print(out["table"])
    print(f"written to {path}", file=sys.stderr)
    return out


if __name__ == "__main__":
    main()
