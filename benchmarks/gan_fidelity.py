"""GAN fidelity benchmark on the real data: how real do generated frauds look?

Trains the cWGAN-GP on split 0 of the ``default`` profile's splits (the same rows a
``fraudaug run`` uses) for each batch composition asked for, and measures the
generated rows against the test split's real frauds (C2ST, KS, correlation, DCR,
near copies), beside SMOTE's rows and the real-vs-real floor.

    python -m benchmarks.gan_fidelity [--data data/raw/creditcard.csv]
        [--fraud-fraction 1.0 --fraud-fraction 0.5] [--set gan.steps=2000]

Prints one JSON object and writes it to ``benchmarks/results/gan-fidelity-<date>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="data/raw/creditcard.csv")
    parser.add_argument("--fraud-fraction", type=float, action="append")
    parser.add_argument(
        "--set", action="append", default=[], metavar="SECTION.KEY=JSON"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import tensorflow as tf

    from pipeline.config import load_config, parse_overrides, run_seeds
    from pipeline.detect import make_sampler
    from pipeline.fidelity import compute_fidelity
    from pipeline.gan.trainer import generate_rows, train_cwgan_gp, training_device
    from pipeline.ingest import read_transactions
    from pipeline.preprocess import TabularTransformer, make_splits, subset_rows

    tf.config.experimental.enable_op_determinism()
    base = load_config("default", seed=args.seed, overrides=parse_overrides(args.set))
    frame, summary = read_transactions(args.data)
    seeds = run_seeds(base.seed, 1)
    splits = make_splits(frame["Class"].to_numpy(), random_states=seeds["split"])
    rows = {s: subset_rows(splits, 0, s) for s in ("train", "validation", "test")}
    transformer = TabularTransformer().fit(frame.iloc[rows["train"]])
    X = {s: transformer.transform(frame.iloc[r]) for s, r in rows.items()}
    y = {s: frame["Class"].to_numpy()[r] for s, r in rows.items()}
    frauds = {s: X[s][y[s] == 1] for s in X}

    smote = make_sampler("smote", base.evaluation, random_state=0)
    X_res, _ = smote.fit_resample(X["train"], y["train"])
    n_synthetic = len(X_res) - len(y["train"])
    result: dict = {
        "benchmark": "gan_fidelity",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "data": {"path": args.data, "sha256": summary.sha256, "rows": summary.rows},
        "device": training_device(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "n_synthetic": n_synthetic,
        "real_train_floor": compute_fidelity(
            frauds["train"], frauds["test"], frauds["train"], random_state=1
        ),
        "smote": compute_fidelity(
            X_res[len(y["train"]) :], frauds["test"], frauds["train"], random_state=1
        ),
        "gan": [],
    }
    for fraction in args.fraud_fraction or [base.gan.fraud_fraction]:
        config = base.gan.model_copy(update={"fraud_fraction": fraction})
        start = time.perf_counter()
        trained = train_cwgan_gp(
            X["train"],
            y["train"],
            config,
            random_state=seeds["gan"][0],
            validation=frauds["validation"],
        )
        seconds = time.perf_counter() - start
        generated = generate_rows(
            trained.generator, n_synthetic, latent_dim=config.latent_dim, random_state=5
        )
        result["gan"].append(
            {
                "fraud_fraction": fraction,
                "config": config.model_dump(mode="json"),
                "train_seconds": round(seconds, 1),
                "steps_per_second": round(config.steps / seconds, 2),
                "nonfinite_steps": trained.meta["nonfinite_steps"],
                "selected_step": trained.meta["selected_step"],
                "validation_c2st": trained.meta["selection"],
                **compute_fidelity(
                    generated, frauds["test"], frauds["train"], random_state=1
                ),
            }
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"gan-fidelity-{datetime.now(UTC):%Y-%m-%d}.json"
    text = json.dumps(result, indent=2, default=float)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(text)
    os.replace(tmp, out)
    print(text)
    return result


if __name__ == "__main__":
    main()
