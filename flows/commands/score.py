"""``fraudaug score``: score a table of transactions with a registered version of the
detector."""

from __future__ import annotations

import argparse
from pathlib import Path

from flows.commands.shared import (
    registry_uri,
    tracking_arg,
)
from pipeline.core.errors import ConfigError
from pipeline.core.paths import (
    check_input_table,
    check_output_table,
)
from pipeline.registry.store import DEFAULT_MODEL_URI  # (stdlib only at import)

NAME = "score"
HELP = "score transactions with the champion model"


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--in", dest="input", required=True, help=".csv(.gz) or .parquet")
    p.add_argument("--out", required=True, help=".csv or .parquet")
    p.add_argument(
        "--model-uri",
        default=DEFAULT_MODEL_URI,
        help="a registered version: models:/NAME@ALIAS or models:/NAME/VERSION "
        f"(default: {DEFAULT_MODEL_URI})",
    )
    p.add_argument(
        "--explain",
        type=int,
        default=0,
        metavar="K",
        help="add each row's K largest reasons: reason_1 (a column of the table), "
        "reason_1_value (its value), reason_1_contribution (log-odds, > 0 towards "
        "fraud), ... (default 0: none)",
    )
    p.add_argument(
        "--explain-rows",
        choices=("all", "flagged"),
        default="all",
        help="the rows --explain gives reasons to: all (default) or the flagged "
        "ones only, the others' left empty (a row's reasons cost about as much as "
        "scoring it with every tree, for every feature)",
    )
    tracking_arg(p)


def main(args: argparse.Namespace) -> int:
    check_input_table(args.input)
    out = check_output_table(args.out)
    if out.absolute() == Path(args.input).absolute():
        raise ConfigError(f"{out}: --out must not be the input file")
    _check_explain(args.explain)
    tracking_uri = registry_uri(args)
    from pipeline.core.artifacts import TableWriter
    from pipeline.core.streaming import RowProgress, prefetched
    from pipeline.data.batches import iter_unlabelled
    from pipeline.registry.scoring import RegisteredScorer

    scorer = RegisteredScorer(args.model_uri, tracking_uri)
    champion = scorer.champion
    flagged = 0
    with (
        TableWriter(out) as writer,
        RowProgress(f"scoring {Path(args.input).name}") as progress,
    ):
        batches = iter_unlabelled(args.input, scorer.schema)
        for frame, first_row, fraction in prefetched(batches):
            scores = scorer.score(
                frame,
                first_row,
                explain=args.explain,
                explain_flagged_only=args.explain_rows == "flagged",
            )
            writer.write(scores)
            flagged += int(scores["flagged"].sum())
            progress.advance(len(frame), fraction)
    print(
        f"scored {writer.rows:,} rows with {champion['model_uri']} "
        f"({', '.join(champion['aliases']) or 'no alias'}; {champion['method']} from "
        f"run {champion['run_id']}, threshold {champion['threshold']:.4f}): "
        f"{flagged:,} flagged; wrote {out}"
    )
    if scorer.unseen:
        print(
            "categories never seen in training (scored as 'unseen'): "
            + ", ".join(f"{c} {n:,} rows" for c, n in scorer.unseen.items())
        )
    return 0


def _check_explain(k: int) -> None:
    from pipeline.registry.serving import reasons_problem

    if problem := reasons_problem(k):
        raise ConfigError(f"--explain {k}: {problem}")
