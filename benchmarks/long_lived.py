"""Memory of one long-lived process that runs the flow night after night (issue 40,
item 6): what it holds after each run.

    python -m benchmarks.long_lived [--data PATH] [--runs 5] [--out FILE]

Runs the flow ``--runs`` times in this process on the real sample (smoke profile,
a short GAN, every seed another so each run's splits, GANs and neighbour answers
are new), and after each records the process's resident memory and what its
caches still hold (``pipeline.core.memory.remembered``: the entries of every
``LastAnswers``, emptied at the end of every run). Flat memory after the first
runs (imports, TensorFlow's and Prefect's own warm-up) is the target: a cache that
kept each run's rows would grow by tens of MB a run.

(``fraudaug serve`` runs each flow run in a process of its own, Prefect's
runner's; this measures the process that runs them, as ``fraudaug run`` in a loop
or a Python scheduler calling the flow would.)

Prints one JSON object and writes it to ``benchmarks/results/long-lived-<date>.json``.
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks import write_result

SAMPLE = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "creditcard_sample.csv.gz"
)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(SAMPLE))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--out", help="default: benchmarks/results/long-lived-<date>.json"
    )
    args = parser.parse_args(argv)

    from flows.commands import PREFECT_ENV

    for key, value in PREFECT_ENV.items():
        os.environ.setdefault(key, value)
    from prefect.testing.utilities import prefect_test_harness

    from flows.fraud_flow import fraud_augmentation
    from pipeline.core.memory import release_free_memory, remembered, rss_bytes

    runs = []
    with (
        tempfile.TemporaryDirectory(prefix="fraudaug-long-lived-") as tmp,
        prefect_test_harness(server_startup_timeout=120),
    ):
        tmp = Path(tmp)
        for night in range(args.runs):
            start = time.perf_counter()
            result = fraud_augmentation(
                data_path=args.data,
                profile="smoke",
                seed=night,
                reports_dir=str(tmp / "reports"),
                tracking_uri=f"sqlite:///{tmp / 'mlflow.db'}",
                overrides={
                    "gan": {"steps": 100},
                    "detector": {"n_estimators": 100},
                    "evaluation": {
                        "methods": ["none", "smote", "borderline_smote", "cwgan_gp"]
                    },
                    "data": {"cache_dir": str(tmp / "cache")},
                },
            )
            gc.collect()
            release_free_memory()
            runs.append(
                {
                    "run": night,
                    "status": result["status"],
                    "seconds": round(time.perf_counter() - start, 1),
                    "rss_mb": round(rss_bytes() / 2**20, 1),
                    "remembered": remembered(),
                }
            )
            print(runs[-1], flush=True)
    settled = [r["rss_mb"] for r in runs[2:]]
    result = {
        "benchmark": "long_lived",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "data": Path(args.data).name,
        "runs": runs,
        "rss_growth_mb_after_run_2": round(settled[-1] - settled[0], 1)
        if len(settled) > 1
        else None,
        "target": "remembered 0 after every run; RSS flat (within ~20 MB) once warm",
    }
    write_result(result, "long-lived", args.out)
    return result


if __name__ == "__main__":
    main()
