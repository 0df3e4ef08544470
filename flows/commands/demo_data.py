"""``fraudaug demo-data``: write deterministic synthetic transactions (the Kaggle
file's shape, or a fraud team's own kind of table)."""

from __future__ import annotations

import argparse

NAME = "demo-data"
HELP = "write deterministic synthetic data"


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--kind",
        choices=["kaggle", "transactions"],
        default="kaggle",
        help="kaggle: the Kaggle file's 31 columns (default); transactions: a fraud "
        "team's own kind of table (ids, a timestamp, categories, counts, a text "
        "label), simulated as in the Fraud Detection Handbook",
    )
    p.add_argument("--rows", type=int, default=284_807, help="default: 284807")
    p.add_argument(
        "--days", type=int, default=90, help="transactions: days covered (default 90)"
    )
    p.add_argument("--out", required=True, help=".csv, .csv.gz or .parquet")
    p.add_argument(
        "--fraud-share", type=float, default=492 / 284_807, help="default: 0.00173"
    )
    p.add_argument("--seed", type=int, default=0)


def main(args: argparse.Namespace) -> int:
    from pipeline.data.datasets import write_demo_data

    out = write_demo_data(
        args.out,
        args.rows,
        fraud_share=args.fraud_share,
        random_state=args.seed,
        kind=args.kind,
        days=args.days,
    )
    print(f"wrote demo rows to {out} (synthetic, not real transactions)")
    return 0
