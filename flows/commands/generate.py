"""``fraudaug generate``: draw fraud rows from a run's GAN into a table, in the
source's own columns."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from pipeline.core import layout
from pipeline.core.errors import ConfigError
from pipeline.core.paths import check_output_table
from pipeline.core.streaming import CHUNK_ROWS
from pipeline.data.schema import load_schema, parse_where
from pipeline.resampling import registry

logger = logging.getLogger(__name__)

NAME = "generate"
HELP = "generate fraud rows with a run's GAN"


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", required=True, help="a run folder, e.g. reports/latest")
    p.add_argument("-n", type=int, required=True, help="rows to generate")
    p.add_argument("--out", required=True, help=".csv or .parquet")
    p.add_argument("--split", type=int, default=0, help="whose GAN (default: 0)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--chunk-rows",
        type=int,
        default=CHUNK_ROWS,
        help=f"rows generated and written at a time (default: {CHUNK_ROWS}); the "
        "rows do not depend on it",
    )
    p.add_argument(
        "--where",
        metavar="COLUMN=VALUE",
        help="only frauds of one category, e.g. --where channel=CNP",
    )


def main(args: argparse.Namespace) -> int:
    if args.n < 1:
        raise ConfigError(f"-n must be at least 1, got {args.n}")
    if args.chunk_rows < 1:
        raise ConfigError(f"--chunk-rows must be at least 1, got {args.chunk_rows}")
    out = check_output_table(args.out)
    run_dir = Path(args.run)
    if not run_dir.is_dir():
        raise ConfigError(f"{run_dir}: no such run folder")
    gan_dir = layout.gan_dir(run_dir, args.split)
    if not gan_dir.is_dir():
        raise ConfigError(
            f"{run_dir}: no GAN for split {args.split} (was "
            f"{registry.with_gan()[0]} among the run's methods? is the split "
            "number right?)"
        )
    if args.where:  # checked against the split's vocabularies before any import
        transformer = gan_dir / layout.TRANSFORMER_FILE
        try:
            features = json.loads(transformer.read_text())["features"]
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"{transformer}: cannot read ({exc})") from exc
        parse_where(args.where, features)
    from pipeline.core.artifacts import TableWriter
    from pipeline.core.backend import describe_device
    from pipeline.core.streaming import RowProgress, prefetched
    from pipeline.gan.generate import gan_dir_of_run, iter_transactions, left_out

    gan_dir = gan_dir_of_run(run_dir, args.split)
    logger.info(
        "generating %s rows with %s on %s%s",
        f"{args.n:,}",
        gan_dir,
        describe_device(),
        f" ({args.where})" if args.where else "",
    )
    frames = iter_transactions(
        gan_dir,
        args.n,
        random_state=args.seed,
        chunk_rows=args.chunk_rows,
        where=args.where,
    )
    schema_file = run_dir / layout.SCHEMA_FILE
    if schema_file.is_file():
        for note in left_out(load_schema(schema_file)):
            logger.info("left out: %s", note)
    with (
        TableWriter(out) as writer,
        RowProgress("generating", total=args.n) as progress,
    ):
        for frame in prefetched(frames):
            writer.write(frame)
            progress.advance(len(frame))
    print(f"wrote {writer.rows:,} generated fraud rows from {gan_dir} to {out}")
    return 0
