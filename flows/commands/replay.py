"""``fraudaug replay``: write a time-ordered table's partitions one by one into a
folder, optionally running a deployment after each."""

from __future__ import annotations

import argparse
from pathlib import Path

from flows.commands.shared import schema_arg
from pipeline.core.errors import ConfigError
from pipeline.core.paths import (
    check_input_table,
    check_writable,
)
from pipeline.data.schema import load_schema

NAME = "replay"
HELP = (
    "write a time-ordered table's partitions one by one into a folder "
    "(optionally running a deployment after each)"
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", help="a table with a time column (.csv(.gz), .parquet)")
    schema_arg(p)
    p.add_argument("--by", choices=["day", "hour"], default="day")
    p.add_argument("--into", required=True, help="the folder to write partitions to")
    p.add_argument(
        "--upto",
        type=int,
        help="stop after the N-th partition (those already there are kept; a "
        "later call goes on)",
    )
    p.add_argument(
        "--deployment",
        help="after each new partition: run this Prefect deployment (e.g. "
        "fraud-augmentation/on-demand) and wait for it",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds to wait for each deployment run (default: no limit)",
    )


def main(args: argparse.Namespace) -> int:
    from pipeline.data.replay import replay

    if args.upto is not None and args.upto < 1:
        raise ConfigError(f"--upto {args.upto}: must be 1 or more")
    check_input_table(args.data)
    check_writable(args.into, "--into")
    schema = load_schema(args.schema)
    after_each = None
    if args.deployment:
        from flows.deploy import run_and_wait

        def after_each(path: Path, number: int) -> None:
            print(f"partition {number}: {path} — running {args.deployment}")
            run_and_wait(args.deployment, timeout=args.timeout)

    done = replay(
        args.data,
        args.into,
        schema=schema,
        by=args.by,
        upto=args.upto,
        after_each=after_each,
    )
    written = [d for d in done if d["written"]]
    print(
        f"{args.into}: {len(done)} partition(s) by {args.by}, {len(written)} written "
        f"now, {len(done) - len(written)} already there; "
        f"{sum(d['rows'] for d in done):,} rows"
    )
    return 0
