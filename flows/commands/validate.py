"""``fraudaug validate``: check a transactions file, or a folder of partitions, against
its schema and print a summary."""

from __future__ import annotations

import argparse
import json

from flows.commands.shared import schema_arg
from pipeline.data.schema import load_schema

NAME = "validate"
HELP = "check a transactions file, print a summary"


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path")
    schema_arg(p)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def main(args: argparse.Namespace) -> int:
    from pipeline.data.ingest import read_transactions
    from pipeline.data.partitions import is_partitioned

    schema = load_schema(args.schema)
    if is_partitioned(args.path):
        return _validate_partitions(args, schema)
    _, summary = read_transactions(args.path, schema)
    if args.json:
        print(json.dumps(summary.to_dict(), indent=2))
    else:
        share = summary.frauds / summary.rows
        print(
            f"{summary.path}: OK — {summary.rows:,} rows, {summary.frauds:,} frauds "
            f"({share:.3%}), {summary.duplicate_rows:,} duplicate rows, "
            f"sha256 {summary.sha256}, schema {schema.name}"
            + (" [demo data]" if summary.demo else "")
        )
    return 0


def _validate_partitions(args: argparse.Namespace, schema) -> int:
    """``validate`` on a folder or glob: every partition by the schema, one by one."""
    from pipeline.data.ingest import read_transactions
    from pipeline.data.partitions import (
        check_partition_labels,
        list_partitions,
        path_columns,
    )

    root, files = list_partitions(args.path)
    summaries = []
    for file in files:
        _, summary = read_transactions(
            file, schema, partition=True, columns=path_columns(root, file, schema)
        )
        summaries.append(
            {"path": file.relative_to(root).as_posix(), **summary.to_dict()}
        )
        if not args.json:
            print(
                f"{summaries[-1]['path']}: OK — {summary.rows:,} rows, "
                f"{summary.frauds:,} frauds, sha256 {summary.sha256[:12]}"
            )
    labels = [s.pop("label_values") for s in summaries]
    check_partition_labels(args.path, files, labels, summaries, schema)
    rows = sum(s["rows"] for s in summaries)
    frauds = sum(s["frauds"] for s in summaries)
    if args.json:
        print(
            json.dumps(
                {"path": str(args.path), "rows": rows, "frauds": frauds,
                 "partitions": summaries},
                indent=2,
            )
        )  # fmt: skip
    else:
        print(
            f"{args.path}: OK — {len(files)} partitions, {rows:,} rows, "
            f"{frauds:,} frauds, schema {schema.name}"
        )
    return 0
