"""``fraudaug schema``: detect a table's schema (what each column is) and write it as
JSON for a person to check."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.core.errors import ConfigError
from pipeline.core.paths import (
    check_input_table,
    check_writable,
)
from pipeline.data.detection import detect_schema, format_detection
from pipeline.data.schema import save_schema

NAME = "schema"
HELP = "detect a table's schema (column kinds) and write it as JSON"


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", help=".csv(.gz), .zip or .parquet")
    p.add_argument("--label", required=True, help="the fraud label column")
    p.add_argument(
        "--positive", help="the label's fraud value (default: 1/true, else the rarer)"
    )
    p.add_argument("--time", help="the time column (timestamp or numeric)")
    p.add_argument("--amount", help="the transaction amount column")
    p.add_argument(
        "--entity",
        help="the card or customer column (card precision top-k counts its alerts)",
    )
    p.add_argument(
        "--id", action="append", default=[], help="an identifier column (repeatable)"
    )
    p.add_argument(
        "--ignore", action="append", default=[], help="a column to drop (repeatable)"
    )
    p.add_argument("--name", help="the schema's name (default: the file's)")
    p.add_argument(
        "--max-categories",
        type=int,
        default=50,
        help="text columns with more values are identifiers (default: 50)",
    )
    p.add_argument("--out", required=True, help="the schema file to write (.json)")
    p.add_argument("--force", action="store_true", help="replace an existing --out")


def main(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists() and not args.force:
        raise ConfigError(
            f"{out} exists (perhaps a schema you edited); choose another --out or "
            "pass --force to replace it"
        )
    check_writable(out.parent, "--out")
    check_input_table(args.data)
    from pipeline.data.reading import read_raw

    frame = read_raw(args.data)
    schema, reasons = detect_schema(
        frame,
        label=args.label,
        positive=args.positive,
        time=args.time,
        amount=args.amount,
        entity=args.entity,
        ids=args.id,
        ignore=args.ignore,
        name=args.name or Path(args.data).name.split(".")[0],
        max_categories=args.max_categories,
    )
    save_schema(out, schema)
    print(format_detection(reasons, schema))
    print(
        f"\nwrote {out}: check the kinds above, edit the file where they are wrong, "
        f"then: fraudaug validate {args.data} --schema {out}"
    )
    return 0
